#ifndef ACTORFLOW_KERNEL_H_
#define ACTORFLOW_KERNEL_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "actorflow/kernel_state.h"
#include "actorflow/register_view.h"
#include "actorflow/stream_key.h"
#include "actorflow/version.h"

// The kernel API: what a task's computation implements and what it sees.
//
// A Kernel is made once per task from the op_type the plan names
// (KernelRegistry, ACTORFLOW_REGISTER_KERNEL), checked once by Init, and
// then called by Forward once per piece, always on its task's thread: a
// kernel needs no lock for its own fields. A context, and every view it
// hands out, is valid only during the call it is passed to; register
// memory belongs to the runtime (inputs are read-only, outputs writable
// until Forward returns). A kernel reports problems as absl::Status (or an
// exception) and never aborts: the runtime stops the run and names the task
// and piece. KernelRegistry may be used from any thread.
//
// REQUIRES: a kernel built outside this repository is compiled against
// these headers and loaded with LoadKernelLibrary (actorflow/
// kernel_library.h), which refuses one built against another
// ACTORFLOW_ABI_VERSION (actorflow/version.h). Nothing here includes
// protobuf.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// One named input or output of a task, as a kernel sees it at Init.
struct KernelIo {
  std::string name;  // "in", "out", ...
  int64_t regst_desc_id = 0;
  // Inputs: the producer's blobs (stated by the plan or inferred). Outputs:
  // what the plan states, if it states anything (`declared`).
  std::vector<BlobDesc> blobs;
  bool declared = true;
};

// What a kernel may check before the plan runs, and where it states its
// outputs' blobs (shape inference): its task's name, op_type and
// attributes, its inputs' blobs and its outputs' as the plan declares them.
// Errors name the field; the caller adds the task. The runtime makes one
// per Init call; it holds nothing a kernel may keep past Init.
class KernelInitContext {
 public:
  // The runtime's part (the task as the plan states it), defined out of
  // the kernel API: a kernel never makes one of these.
  struct Rep;
  explicit KernelInitContext(std::unique_ptr<Rep> rep);
  ~KernelInitContext();
  KernelInitContext(const KernelInitContext&) = delete;
  KernelInitContext& operator=(const KernelInitContext&) = delete;

  const std::string& task_name() const;
  const std::string& op_type() const;
  // The names of the task's attributes (kernel.attr), sorted.
  std::vector<std::string> attr_names() const;
  const std::vector<KernelIo>& inputs() const;
  const std::vector<KernelIo>& outputs() const;
  // The i-th input consumed under `name`, or the output `name`; null if
  // the task has none.
  const KernelIo* input(absl::string_view name, int i = 0) const;
  const KernelIo* output(absl::string_view name) const;

  // Shape inference: states the blobs of output `name` (the task must
  // produce it). The runtime checks them against what the plan declares,
  // or fills them in where it declares nothing. An output no kernel states
  // keeps the plan's blobs (a source's), or has none (a control token).
  // The context is const to its kernel; this records into the table the
  // caller reads after Init.
  absl::Status SetOutputBlobs(absl::string_view name,
                              std::vector<BlobDesc> blobs) const;
  // What Init stated for output i (null: nothing).
  const std::vector<BlobDesc>* inferred(int i) const;

  // Typed attributes: an error if present with another type; the Or forms
  // return `fallback` when absent, the others an error.
  absl::StatusOr<double> FloatAttr(absl::string_view name) const;
  absl::StatusOr<double> FloatAttrOr(absl::string_view name,
                                     double fallback) const;
  absl::StatusOr<int64_t> IntAttr(absl::string_view name) const;
  absl::StatusOr<int64_t> IntAttrOr(absl::string_view name,
                                    int64_t fallback) const;
  absl::StatusOr<std::string> StringAttr(absl::string_view name) const;
  absl::StatusOr<std::string> StringAttrOr(absl::string_view name,
                                           std::string fallback) const;
  absl::StatusOr<bool> BoolAttr(absl::string_view name) const;
  absl::StatusOr<bool> BoolAttrOr(absl::string_view name, bool fallback) const;
  // List attributes (`list { i: [...] }`); absent: an empty list. A list
  // of another element kind is an error.
  absl::StatusOr<std::vector<int64_t>> IntListAttr(
      absl::string_view name) const;
  absl::StatusOr<std::vector<double>> FloatListAttr(
      absl::string_view name) const;
  absl::StatusOr<std::vector<std::string>> StringListAttr(
      absl::string_view name) const;

  // Signature checks for kernels that use the conventional names: between
  // min and max inputs, all named "in"; an output named "out" (required or
  // forbidden), no other.
  absl::Status ExpectInputs(int min, int max) const;
  absl::Status ExpectOutput(bool required) const;
  absl::Status ExpectOptionalOutput() const;
  // Every input has the same blobs as the first (count, data types, shapes,
  // dynamic or not; names may differ). Errors name both registers, the
  // blob and the dimension.
  absl::Status ExpectSameBlobs() const;
  // Every blob of every input has one of `types`.
  absl::Status ExpectInputTypes(absl::Span<const DataType> types) const;
  // States every output (there is at most "out") as a copy of the first
  // input's blobs: what element-wise kernels produce.
  absl::Status InferOutputsLikeInput() const;

  // The runtime's part; opaque to kernels.
  const Rep& rep() const { return *rep_; }

 private:
  std::unique_ptr<Rep> rep_;
};

// What a kernel sees when it acts: the piece, its registers, its stream.
// Registers come as views: inputs read-only, outputs writable, and none of
// the runtime's bookkeeping in reach.
//
// The runtime's act context derives from this class and fills the fields
// below, once per actor and then per act (register pointers, piece). They
// are plain data with a fixed layout, part of ACTORFLOW_ABI_VERSION
// (actorflow/version.h); everything else a context knows (the task's
// names, which registers a name groups) is reached out of line.
class KernelContext {
 public:
  int64_t piece_id() const { return piece_id_; }
  const StreamKey& stream() const { return stream_; }
  // The task's name and op_type, as the plan states them.
  const std::string& task_name() const;
  const std::string& op_type() const;
  // The bytes this kernel keeps for its output registers beyond their own
  // memory (buffers a register points into), as of now: shown in
  // TaskStats::register_bytes beside the registers. Any act may restate it.
  void ReportHeldBytes(int64_t bytes) const;
  // The cudaStream_t to launch on (GPU streams); null on CPU streams. The
  // thread's current device is the stream's, stream().device_index.
  void* cuda_stream() const { return cuda_stream_; }
  // Whether the run is being stopped (a failure anywhere in it, a limit, the
  // session destroyed). A kernel that waits on something outside the plan
  // (a socket, another process) should give up and return an error once it
  // is; the runtime waits only SessionOptions::cancel_grace for it.
  bool cancelled() const {
    return cancelled_ != nullptr && cancelled_->load(std::memory_order_relaxed);
  }

  // Every input register, in the order of the consumed names (sorted) and
  // of each name's id list.
  int num_inputs() const { return num_inputs_; }
  ConstRegisterView input(int i) const { return ConstRegisterView(inputs_[i]); }
  // The i-th register consumed under `name`; an empty view if none.
  int num_inputs(absl::string_view name) const;
  ConstRegisterView input(absl::string_view name, int i = 0) const;
  int num_outputs() const { return num_outputs_; }
  RegisterView output(int i) const { return RegisterView(outputs_[i]); }
  // The output produced under `name`; an empty view if none.
  RegisterView output(absl::string_view name) const;

  // The runtime's part: names and groups, defined out of the kernel API.
  struct Rep;

 protected:
  KernelContext() = default;
  KernelContext(const KernelContext&) = default;
  KernelContext& operator=(const KernelContext&) = default;
  ~KernelContext() = default;

  int64_t piece_id_ = -1;
  StreamKey stream_;
  void* cuda_stream_ = nullptr;
  const std::atomic<bool>* cancelled_ = nullptr;
  RegisterBlobs* const* inputs_ = nullptr;   // num_inputs_ of them
  RegisterBlobs* const* outputs_ = nullptr;  // num_outputs_ of them
  const Rep* rep_ = nullptr;
  int32_t num_inputs_ = 0;
  int32_t num_outputs_ = 0;
};

// What a sink reports after a run (the `checksum` kernel's figures).
struct SinkSummary {
  int64_t pieces = 0;
  double checksum = 0;
  bool in_order = true;
};

// What a kernel that waits for something outside the plan (a peer across
// the network) gives its actor instead of blocking its thread: the actor
// acts only while the gate is open too. Whatever opens it calls the waker
// it was given, from any thread, for the actor to look again.
class KernelGate {
 public:
  virtual ~KernelGate() = default;
  // On the actor's thread, whenever the actor could act otherwise.
  virtual bool Open() = 0;
  // Once, before the first run. `wake` is valid while the kernel lives.
  virtual void SetWaker(std::function<void()> wake) = 0;
};

// A task's computation. One instance per task, used only on the task's
// thread. Register with ACTORFLOW_REGISTER_KERNEL from any library linked in
// (mark that cc_library `alwayslink = True` so the registration is kept), or
// build it as a kernel library loaded at run time (kernel_library.h).
class Kernel {
 public:
  virtual ~Kernel() = default;
  // Null for a kernel that can always run once its registers are ready.
  virtual KernelGate* gate() { return nullptr; }
  // Checks attributes and signature; no side effects beyond the kernel's
  // own fields (validation calls it too).
  virtual absl::Status Init(const KernelInitContext& ctx) {
    (void)ctx;
    return absl::OkStatus();
  }
  virtual absl::Status Forward(KernelContext* ctx) = 0;
  // Fills the outputs of a task whose registers are initial
  // (RegisterDescProto.initial_register), once at the start of each run, before
  // any Forward of that run. No input is present: ctx has outputs only.
  virtual absl::Status InitialOutput(KernelContext* ctx) {
    (void)ctx;
    return absl::UnimplementedError(
        "this kernel cannot fill an initial register (it has no "
        "InitialOutput)");
  }
  virtual std::optional<SinkSummary> sink_summary() const {
    return std::nullopt;
  }

  // State that outlives a piece (actorflow/kernel_state.h): weights, optimizer
  // moments, counters, a sink's running totals. A kernel with some says so
  // and saves all of it that later pieces depend on; RestoreState gives it
  // back to a kernel fresh from Init, before its first piece, so that the
  // pieces after the cut come out bit for bit as if nothing had stopped.
  // Whatever follows from the piece id and the attributes alone (a seeded
  // shuffle of epoch p / n, a source's value for piece p) is no state: the
  // checkpoint carries the piece counters and the plan's attributes.
  virtual bool has_state() const { return false; }
  virtual absl::Status SaveState(const KernelStateContext& ctx,
                                 KernelState* state) {
    (void)ctx;
    (void)state;
    return absl::OkStatus();
  }
  virtual absl::Status RestoreState(const KernelStateContext& ctx,
                                    const KernelState& state) {
    (void)ctx;
    (void)state;
    return absl::OkStatus();
  }
};

using KernelFactory = std::function<std::unique_ptr<Kernel>()>;

// Kernels by op_type and device: a task gets the kernel registered for its
// stream's device (CPU or GPU), so one plan vocabulary runs on both.
class KernelRegistry {
 public:
  static KernelRegistry& Get();

  // False (and the first registration stays) if op_type is taken for
  // `device`, or if `abi_stamp` is not this runtime's: the default
  // argument is filled in where the call is compiled, so a call from a
  // library built against other headers (include/actorflow/version.h)
  // carries their stamp and is refused, with a message on stderr. Any
  // thread; a kernel library's static initializers call it while
  // LoadKernelLibrary (actorflow/kernel_library.h) loads the library.
  bool Register(const std::string& op_type, KernelFactory factory,
                DeviceKind device = DeviceKind::kCpu,
                const char* abi_stamp = ACTORFLOW_KERNEL_ABI_STAMP);
  absl::StatusOr<std::unique_ptr<Kernel>> Create(
      const std::string& op_type, DeviceKind device = DeviceKind::kCpu) const;
  bool Has(const std::string& op_type,
           DeviceKind device = DeviceKind::kCpu) const;
  std::vector<std::string> op_types(
      DeviceKind device = DeviceKind::kCpu) const;  // sorted

  // For LoadKernelLibrary: a point in the registry's history, what was
  // registered and refused (as "op_type (device)") since, and undoing it.
  struct Mark {
    size_t registered = 0;
    size_t refused = 0;
  };
  Mark mark() const;
  std::vector<std::string> RegisteredSince(Mark mark) const;
  std::vector<std::string> RefusedSince(Mark mark) const;
  void RollBackTo(Mark mark);
  // While true, a refused registration is only recorded (the loader
  // reports it), not also printed.
  void set_quiet_refusals(bool quiet);

 private:
  struct Entry {
    std::string op_type;
    DeviceKind device;
    KernelFactory factory;
  };
  const Entry* Find(const std::string& op_type, DeviceKind device) const;

  // Both only grow, except by RollBackTo; guarded by a mutex in kernel.cc
  // (kept out of this header, which kernels outside the project include).
  std::vector<Entry> factories_;
  std::vector<std::string> refused_;
  bool quiet_refusals_ = false;
};

#define ACTORFLOW_KERNEL_CONCAT_INNER(a, b) a##b
#define ACTORFLOW_KERNEL_CONCAT(a, b) ACTORFLOW_KERNEL_CONCAT_INNER(a, b)

#define ACTORFLOW_REGISTER_KERNEL_FOR(op_type, KernelClass, device)            \
  static const bool ACTORFLOW_KERNEL_CONCAT(kKernelRegistered_, __COUNTER__) = \
      ::actorflow::KernelRegistry::Get().Register(                             \
          op_type,                                                             \
          []() -> std::unique_ptr<::actorflow::Kernel> {                       \
            return std::make_unique<KernelClass>();                            \
          },                                                                   \
          device, ACTORFLOW_KERNEL_ABI_STAMP)

// ACTORFLOW_REGISTER_KERNEL("my_op", MyKernel);  at namespace scope in a .cc
// file: the CPU kernel of my_op. Each use also stamps the library with the
// kernel ABI version of the headers it is compiled against, which the
// loader checks before it loads the library (actorflow/version.h).
// ACTORFLOW_REGISTER_GPU_KERNEL: the one for GPU streams.
// ACTORFLOW_REGISTER_KERNEL_FOR names the DeviceKind.
#define ACTORFLOW_REGISTER_KERNEL(op_type, KernelClass) \
  ACTORFLOW_REGISTER_KERNEL_FOR(op_type, KernelClass,   \
                                ::actorflow::DeviceKind::kCpu)
#define ACTORFLOW_REGISTER_GPU_KERNEL(op_type, KernelClass) \
  ACTORFLOW_REGISTER_KERNEL_FOR(op_type, KernelClass,       \
                                ::actorflow::DeviceKind::kGpu)

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_KERNEL_H_
