#include "net/net_kernels.h"

#include <memory>

#include "actorflow/compiled_plan.h"

namespace actorflow::internal::net {
namespace {

// Both kernels are gated (see KernelGate): they act only when the transport
// can go on at once, so they never block the thread they share.
class NetSend final : public Kernel, public KernelGate {
 public:
  explicit NetSend(Transport* transport) : transport_(transport) {}
  ~NetSend() override {
    if (bound_) transport_->SetSendWaker(register_, peer_, nullptr);
  }
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status ok = ctx.ExpectInputs(1, 1);
    if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/false);
    if (!ok.ok()) return ok;
    absl::StatusOr<int64_t> peer = ctx.IntAttr("peer");
    if (!peer.ok()) return peer.status();
    peer_ = static_cast<int32_t>(*peer);
    register_ = ctx.inputs()[0].regst_desc_id;
    transport_->NoteRegisterBytes(RegisterBufferBytes(ctx.inputs()[0].blobs));
    return absl::OkStatus();
  }
  KernelGate* gate() override { return this; }
  bool Open() override { return transport_->SendGateOpen(register_, peer_); }
  void SetWaker(std::function<void()> wake) override {
    bound_ = true;
    transport_->SetSendWaker(register_, peer_, std::move(wake));
  }
  absl::Status Forward(KernelContext* ctx) override {
    return transport_->Send(register_, peer_, *ctx);
  }

 private:
  Transport* const transport_;
  int32_t peer_ = 0;
  int64_t register_ = 0;
  bool bound_ = false;
};

class NetRecv final : public Kernel, public KernelGate {
 public:
  explicit NetRecv(Transport* transport) : transport_(transport) {}
  ~NetRecv() override {
    if (bound_) transport_->SetReceiveWaker(register_, nullptr);
  }
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status ok = ctx.ExpectInputs(0, 0);
    if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
    if (!ok.ok()) return ok;
    absl::StatusOr<int64_t> peer = ctx.IntAttr("peer");
    if (!peer.ok()) return peer.status();
    register_ = ctx.outputs()[0].regst_desc_id;
    transport_->NoteRegisterBytes(RegisterBufferBytes(ctx.outputs()[0].blobs));
    return absl::OkStatus();
  }
  KernelGate* gate() override { return this; }
  bool Open() override { return transport_->ReceiveGateOpen(register_); }
  void SetWaker(std::function<void()> wake) override {
    bound_ = true;
    transport_->SetReceiveWaker(register_, std::move(wake));
  }
  absl::Status Forward(KernelContext* ctx) override {
    return transport_->Receive(register_, *ctx);
  }

 private:
  Transport* const transport_;
  int64_t register_ = 0;
  bool bound_ = false;
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

}  // namespace actorflow::internal::net
