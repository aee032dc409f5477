#include "net/net_kernels.h"

#include <memory>

namespace actorflow::net {
namespace {

class NetSend final : public Kernel {
 public:
  explicit NetSend(Transport* transport) : transport_(transport) {}
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status ok = ctx.ExpectInputs(1, 1);
    if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/false);
    if (!ok.ok()) return ok;
    absl::StatusOr<int64_t> peer = ctx.IntAttr("peer");
    if (!peer.ok()) return peer.status();
    peer_ = static_cast<int32_t>(*peer);
    regst_ = ctx.inputs()[0].regst_desc_id;
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override {
    return transport_->Send(regst_, peer_, *ctx);
  }

 private:
  Transport* const transport_;
  int32_t peer_ = 0;
  int64_t regst_ = 0;
};

class NetRecv final : public Kernel {
 public:
  explicit NetRecv(Transport* transport) : transport_(transport) {}
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status ok = ctx.ExpectInputs(0, 0);
    if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
    if (!ok.ok()) return ok;
    absl::StatusOr<int64_t> peer = ctx.IntAttr("peer");
    if (!peer.ok()) return peer.status();
    regst_ = ctx.outputs()[0].regst_desc_id;
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override {
    return transport_->Receive(regst_, *ctx);
  }

 private:
  Transport* const transport_;
  int64_t regst_ = 0;
};

}  // namespace

void BindNetKernels(Transport* transport, KernelBindings* bindings) {
  bindings->Bind("net_send", [transport]() -> std::unique_ptr<Kernel> {
    return std::make_unique<NetSend>(transport);
  });
  bindings->Bind("net_recv", [transport]() -> std::unique_ptr<Kernel> {
    return std::make_unique<NetRecv>(transport);
  });
}

}  // namespace actorflow::net
