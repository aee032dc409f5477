#include "actorflow/kernel_bindings.h"

#include <algorithm>
#include <set>
#include <utility>

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace {

class FunctionKernel final : public Kernel {
 public:
  FunctionKernel(KernelBindings::ForwardFn forward, KernelBindings::InitFn init,
                 KernelBindings::SaveFn save = nullptr,
                 KernelBindings::RestoreFn restore = nullptr)
      : forward_(std::move(forward)),
        init_(std::move(init)),
        save_(std::move(save)),
        restore_(std::move(restore)) {}

  bool has_state() const override { return save_ != nullptr; }
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override {
    return save_ ? save_(ctx, state) : absl::OkStatus();
  }
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override {
    return restore_ ? restore_(ctx, state) : absl::OkStatus();
  }

  absl::Status Init(const KernelInitContext& ctx) override {
    if (init_) return init_(ctx);
    for (const KernelIo& out : ctx.outputs()) {
      if (out.declared || ctx.inputs().empty()) continue;
      absl::Status status = ctx.SetOutputBlobs(out.name, ctx.inputs()[0].blobs);
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override { return forward_(ctx); }

 private:
  KernelBindings::ForwardFn forward_;
  KernelBindings::InitFn init_;
  KernelBindings::SaveFn save_;
  KernelBindings::RestoreFn restore_;
};

// The caller's object, used in place: the runtime's unique_ptr owns only
// this forwarder.
class BorrowedKernel final : public Kernel {
 public:
  explicit BorrowedKernel(Kernel* kernel) : kernel_(kernel) {}
  absl::Status Init(const KernelInitContext& ctx) override {
    return kernel_->Init(ctx);
  }
  absl::Status Forward(KernelContext* ctx) override {
    return kernel_->Forward(ctx);
  }
  std::optional<SinkSummary> sink_summary() const override {
    return kernel_->sink_summary();
  }
  bool has_state() const override { return kernel_->has_state(); }
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override {
    return kernel_->SaveState(ctx, state);
  }
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override {
    return kernel_->RestoreState(ctx, state);
  }

 private:
  Kernel* kernel_;
};

}  // namespace

KernelBindings& KernelBindings::Bind(std::string op_type, KernelFactory factory,
                                     DeviceKind device) {
  entries_.push_back({std::move(op_type), device, std::move(factory), false});
  return *this;
}

KernelBindings& KernelBindings::BindFunction(std::string op_type,
                                             ForwardFn forward, InitFn init,
                                             DeviceKind device) {
  return Bind(
      std::move(op_type),
      [forward = std::move(forward), init = std::move(init)] {
        return std::make_unique<FunctionKernel>(forward, init);
      },
      device);
}

KernelBindings& KernelBindings::BindFunction(std::string op_type,
                                             ForwardFn forward, InitFn init,
                                             SaveFn save, RestoreFn restore,
                                             DeviceKind device) {
  return Bind(
      std::move(op_type),
      [forward = std::move(forward), init = std::move(init),
       save = std::move(save), restore = std::move(restore)] {
        return std::make_unique<FunctionKernel>(forward, init, save, restore);
      },
      device);
}

KernelBindings& KernelBindings::BindObject(std::string op_type, Kernel* kernel,
                                           DeviceKind device) {
  Bind(
      std::move(op_type),
      [kernel] { return std::make_unique<BorrowedKernel>(kernel); }, device);
  entries_.back().object = true;
  return *this;
}

// The latest binding of an op_type wins.
const KernelBindings::Entry* KernelBindings::Find(const std::string& op_type,
                                                  DeviceKind device) const {
  for (auto it = entries_.rbegin(); it != entries_.rend(); ++it) {
    if (it->op_type == op_type && it->device == device) return &*it;
  }
  return nullptr;
}

bool KernelBindings::Binds(const std::string& op_type,
                           DeviceKind device) const {
  return Find(op_type, device) != nullptr;
}

bool KernelBindings::Has(const std::string& op_type, DeviceKind device) const {
  return Find(op_type, device) != nullptr ||
         KernelRegistry::Get().Has(op_type, device);
}

absl::StatusOr<std::unique_ptr<Kernel>> KernelBindings::Create(
    const std::string& op_type, DeviceKind device) const {
  if (const Entry* entry = Find(op_type, device)) return entry->factory();
  return KernelRegistry::Get().Create(op_type, device);
}

std::vector<std::string> KernelBindings::op_types(DeviceKind device) const {
  std::set<std::string> names;
  for (const std::string& name : KernelRegistry::Get().op_types(device)) {
    names.insert(name);
  }
  for (const Entry& entry : entries_) {
    if (entry.device == device) names.insert(entry.op_type);
  }
  return {names.begin(), names.end()};
}

bool KernelBindings::IsObject(const std::string& op_type,
                              DeviceKind device) const {
  const Entry* entry = Find(op_type, device);
  return entry != nullptr && entry->object;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
