// KernelGate: an actor acts only while its kernel's gate is open too, and
// looks again when the waker is called from another thread.
#include <atomic>
#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <thread>

#include "actorflow/session.h"
#include "base/mutex.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace {

// A source that makes one piece per permit the test grants: the permits
// are what lies outside the plan. It counts every Forward that came while
// the gate was shut (there must be none).
class PermitSource final : public Kernel, public KernelGate {
 public:
  struct Shared {
    std::atomic<int64_t> permits{0};
    std::atomic<int64_t> forwards{0};
    std::atomic<int64_t> forwards_while_shut{0};
    Mutex mu;
    std::function<void()> wake ABSL_GUARDED_BY(mu);

    void Grant() {
      permits.fetch_add(1);
      MutexLock lock(&mu);
      if (wake) wake();
    }
  };
  explicit PermitSource(Shared* shared) : shared_(shared) {}
  ~PermitSource() override {
    MutexLock lock(&shared_->mu);
    shared_->wake = nullptr;
  }
  KernelGate* gate() override { return this; }
  bool Open() override { return shared_->permits.load() > 0; }
  void SetWaker(std::function<void()> wake) override {
    MutexLock lock(&shared_->mu);
    shared_->wake = std::move(wake);
  }
  absl::Status Forward(KernelContext* ctx) override {
    if (shared_->permits.fetch_sub(1) <= 0) {
      shared_->forwards_while_shut.fetch_add(1);
    }
    shared_->forwards.fetch_add(1);
    TensorView out = ctx->output(0).blob(0);
    *static_cast<int64_t*>(out.mutable_raw_data()) = ctx->piece_id() * 7;
    return absl::OkStatus();
  }

 private:
  Shared* const shared_;
};

TEST_CASE("a gated source acts once per opening, woken from another thread",
          "[kernel_gate]") {
  TaskDef gated{.name = "gated", .op_type = "permit_source"};
  gated.blobs = {BlobProto("x", DT_INT64, {1})};
  gated.register_num = 3;
  TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"gated"}};
  fetch.has_output = false;
  fetch.stream_index = 1;
  auto plan = BuildPlan({gated, fetch}, 0);
  REQUIRE(plan.ok());

  PermitSource::Shared shared;
  SessionOptions options;
  options.kernels.Bind("permit_source", [&shared] {
    return std::make_unique<PermitSource>(&shared);
  });
  auto session = Session::Create(*plan, std::move(options));
  INFO(session.status().ToString());
  REQUIRE(session.ok());

  const int64_t pieces = 6;
  REQUIRE((*session)->Start(pieces).ok());
  for (int64_t p = 0; p < pieces; ++p) {
    // Nothing was made beyond the permits granted so far: the shut gate
    // held the source back although it had free registers.
    CHECK(shared.forwards.load() == p);
    // Granted from another thread, as a network poller would.
    std::thread granter([&shared] { shared.Grant(); });
    auto tensor = (*session)->Fetch("out");
    granter.join();
    REQUIRE(tensor.ok());
    auto values = tensor->data<int64_t>();
    REQUIRE(values.ok());
    CHECK((*values)[0] == p * 7);
  }
  CHECK(absl::IsOutOfRange((*session)->Fetch("out").status()));
  auto stats = (*session)->Wait();
  REQUIRE(stats.ok());
  CHECK(shared.forwards.load() == pieces);
  CHECK(shared.forwards_while_shut.load() == 0);
}

}  // namespace
}  // namespace actorflow::internal
