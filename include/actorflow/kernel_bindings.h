#ifndef ACTORFLOW_KERNEL_BINDINGS_H_
#define ACTORFLOW_KERNEL_BINDINGS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/kernel.h"
#include "actorflow/stream_key.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Kernels for one session, from the caller's own program: an op_type bound
// here wins over ACTORFLOW_REGISTER_KERNEL's registry for the plans compiled
// with these bindings, and nothing global changes. Unbound op_types come from
// the registry.
class KernelBindings {
 public:
  using ForwardFn = std::function<absl::Status(KernelContext*)>;
  using InitFn = std::function<absl::Status(const KernelInitContext&)>;

  // Every task of `op_type` on `device` streams gets its own kernel from
  // `factory`.
  KernelBindings& Bind(std::string op_type, KernelFactory factory,
                       DeviceKind device = DeviceKind::kCpu);
  // Every task of `op_type` runs `forward` for each piece, after `init` at
  // compile time. Without `init`, outputs the plan leaves unstated get the
  // first input's blobs. The functions are shared by every such task, on
  // their tasks' threads: if several tasks on different streams use them,
  // they must be safe to call at once.
  KernelBindings& BindFunction(std::string op_type, ForwardFn forward,
                               InitFn init = nullptr,
                               DeviceKind device = DeviceKind::kCpu);
  // The same, for functions that keep state between pieces (captured by
  // the caller): checkpoints call `save` and restores `restore` (see
  // Kernel::SaveState), on the task's thread; ctx.task tells the tasks
  // apart when several share the functions.
  using SaveFn =
      std::function<absl::Status(const KernelStateContext&, KernelState*)>;
  using RestoreFn = std::function<absl::Status(const KernelStateContext&,
                                               const KernelState&)>;
  KernelBindings& BindFunction(std::string op_type, ForwardFn forward,
                               InitFn init, SaveFn save, RestoreFn restore,
                               DeviceKind device = DeviceKind::kCpu);
  // The one task of `op_type` runs `kernel`, which the caller owns and keeps
  // alive while the session lives (its state is the caller's to read). A
  // plan with two tasks of that op_type is refused.
  KernelBindings& BindObject(std::string op_type, Kernel* kernel,
                             DeviceKind device = DeviceKind::kCpu);

  // Bindings first, then the registry.
  bool Has(const std::string& op_type, DeviceKind device) const;
  // These bindings alone, not the registry.
  bool Binds(const std::string& op_type, DeviceKind device) const;
  absl::StatusOr<std::unique_ptr<Kernel>> Create(const std::string& op_type,
                                                 DeviceKind device) const;
  // Both sources, sorted, each once.
  std::vector<std::string> op_types(DeviceKind device) const;
  // Whether op_type is bound to one caller-owned object (BindObject).
  bool IsObject(const std::string& op_type, DeviceKind device) const;

 private:
  struct Entry {
    std::string op_type;
    DeviceKind device;
    KernelFactory factory;
    bool object = false;
  };
  const Entry* Find(const std::string& op_type, DeviceKind device) const;

  std::vector<Entry> entries_;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_KERNEL_BINDINGS_H_
