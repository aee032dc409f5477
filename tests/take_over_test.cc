// Fetched memory handed over to the caller without a copy
// (FetchedTensor::TakeOver, Pipeline::TakeOutputs): the bytes stay the
// caller's while the plan runs on, outlive the session, and come back for
// reuse once dropped; a register whose memory cannot leave is refused and
// stays held.
#include <catch2/catch.hpp>
#include <cstring>
#include <memory>
#include <set>
#include <vector>

#include "actorflow/pipeline.h"
#include "actorflow/session.h"
#include "memory/memory_recycler.h"
#include "pipeline/dataset.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

// feed (int32 [4], two registers) -> identity -> fetch, and with `also_sink`
// a checksum reading the identity's registers beside the fetch.
std::unique_ptr<Session> FeedToFetch(bool also_sink) {
  TaskDef feed{.name = "in", .op_type = "feed"};
  feed.blobs = {BlobProto("x", DT_INT32, {4})};
  feed.register_num = 2;
  TaskDef mid{.name = "mid", .op_type = "identity", .inputs = {"in"}};
  mid.infer_output = true;
  mid.register_num = 2;
  mid.stream_index = 1;
  TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"mid"}};
  fetch.has_output = false;
  std::vector<TaskDef> tasks = {feed, mid, fetch};
  if (also_sink) {
    TaskDef sink{.name = "sum", .op_type = "checksum", .inputs = {"mid"}};
    sink.has_output = false;
    tasks.push_back(sink);
  }
  auto plan = BuildPlan(tasks, 0);
  REQUIRE_OK(plan.status());
  auto session = Session::Create(*std::move(plan));
  REQUIRE_OK(session.status());
  return *std::move(session);
}

Tensor Piece(int p) {
  auto tensor = Tensor::FromValues<int32_t>(
      {4}, std::vector<int32_t>{p, p + 1, p + 2, p + 3});
  REQUIRE_OK(tensor.status());
  return *std::move(tensor);
}

bool HoldsPiece(const TakenTensor& taken, int p) {
  if (taken.data_type != DT_INT32 || taken.shape != std::vector<int64_t>{4}) {
    return false;
  }
  const auto* values = static_cast<const int32_t*>(taken.data);
  return values[0] == p && values[3] == p + 3;
}

TEST_CASE("taken-over bytes stay the caller's while the plan runs on") {
  std::unique_ptr<Session> session = FeedToFetch(/*also_sink=*/false);
  // Twenty pieces through two registers each: every register is written
  // again many times, but never over what the caller kept.
  std::vector<TakenTensor> kept;
  for (int p = 0; p < 20; ++p) {
    REQUIRE_OK(session->Feed("in", Piece(p * 10)));
    auto fetched = session->FetchBorrowed("out");
    REQUIRE_OK(fetched.status());
    auto taken = fetched->TakeOver();
    REQUIRE_OK(taken.status());
    // Released with the take-over: nothing is held any more.
    CHECK(absl::IsFailedPrecondition(fetched->TakeOver().status()));
    kept.push_back(*std::move(taken));
  }
  REQUIRE_OK(session->CloseFeeds());
  REQUIRE_OK(session->Wait().status());
  for (int p = 0; p < 20; ++p) {
    INFO("piece " << p);
    CHECK(HoldsPiece(kept[p], p * 10));
  }
  // And after the session is gone.
  session.reset();
  for (int p = 0; p < 20; ++p) CHECK(HoldsPiece(kept[p], p * 10));
}

TEST_CASE("memory read by another task too is refused and stays held") {
  std::unique_ptr<Session> session = FeedToFetch(/*also_sink=*/true);
  REQUIRE_OK(session->Feed("in", Piece(7)));
  auto fetched = session->FetchBorrowed("out");
  REQUIRE_OK(fetched.status());
  absl::Status refused = fetched->TakeOver().status();
  CHECK(absl::IsFailedPrecondition(refused));
  CHECK_THAT(std::string(refused.message()),
             Catch::Contains("other tasks read it too; copy it instead"));
  // Still held: the view reads the piece, and a copy of it works.
  CHECK((*fetched->view().data<int32_t>())[0] == 7);
  fetched->Release();
  REQUIRE_OK(session->CloseFeeds());
  REQUIRE_OK(session->Wait().status());
}

TEST_CASE("a dropped buffer is lent out again, up to the number kept") {
  auto recycler = std::make_shared<MemoryRecycler>(/*keep_per_size=*/1);
  auto first = recycler->Get(64);
  REQUIRE_OK(first.status());
  SyncedMemory* memory = first->get();
  std::shared_ptr<const void> owner = recycler->Lend(*std::move(first));
  CHECK(recycler->kept() == 0);
  owner.reset();
  CHECK(recycler->kept() == 1);
  auto again = recycler->Get(64);
  REQUIRE_OK(again.status());
  CHECK(again->get() == memory);
  CHECK(recycler->kept() == 0);
  // Another size is a new buffer; beyond keep_per_size one is freed.
  auto other = recycler->Get(128);
  REQUIRE_OK(other.status());
  CHECK(other->get() != memory);
  auto a = recycler->Lend(*std::move(again));
  auto b = recycler->Lend(std::make_shared<SyncedMemory>(64));
  a.reset();
  b.reset();
  CHECK(recycler->kept() == 1);
  // An owner that outlives its recycler frees its buffer itself.
  auto late = recycler->Lend(*std::move(other));
  recycler.reset();
  late.reset();
}

TEST_CASE("TakeOutputs hands out the batches Outputs would, to keep") {
  const std::string images =
      pipeline::FashionMnistDir() + "/t10k-images-idx3-ubyte.gz";
  const std::string labels =
      pipeline::FashionMnistDir() + "/t10k-labels-idx1-ubyte.gz";
  auto raw = pipeline::ReadIdx(images);
  REQUIRE_OK(raw.status());
  PipelineOptions options;
  options.batch_size = 10;
  options.prefetch_depth = 2;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{.op = "idx_reader",
                       .name = "reader",
                       .outputs = {"images", "labels"},
                       .attrs = {{"images", StringAttr(images)},
                                 {"labels", StringAttr(labels)}}});
  pipe.SetOutputs({"images", "labels"});
  REQUIRE_OK(pipe.Build());
  // Where the batch stage's registers are: four batches looked at in
  // place (at most that many registers with a prefetch depth of 2).
  std::set<const void*> registers;
  for (int b = 0; b < 4; ++b) {
    REQUIRE_OK(pipe.Run());
    auto view = pipe.Outputs();
    REQUIRE_OK(view.status());
    registers.insert(view->outputs[0].data().raw_data());
  }
  // Eight batches taken and all kept: each is the test set's next ten
  // images, whatever the registers did since, and the first is a
  // register's own memory, not a copy.
  std::vector<TakenBatch> kept;
  for (int b = 0; b < 8; ++b) {
    REQUIRE_OK(pipe.Run());
    auto batch = pipe.TakeOutputs();
    REQUIRE_OK(batch.status());
    CHECK(batch->index == 4 + b);
    REQUIRE(batch->outputs.size() == 2);
    CHECK(batch->outputs[0].name == "images");
    CHECK(batch->outputs[0].data.shape == std::vector<int64_t>{10, 28, 28, 1});
    CHECK(batch->outputs[0].shapes.shape()[0] == 10);
    kept.push_back(*std::move(batch));
  }
  CHECK(registers.count(kept[0].outputs[0].data.data) == 1);
  // Two more scheduled, then a checkpoint, which copies what is in flight
  // out of the registers: those copies are what is handed over.
  REQUIRE_OK(pipe.Run());
  REQUIRE_OK(pipe.Run());
  REQUIRE_OK(pipe.Checkpoint(testing::TestTempDir("take_over_checkpoint"))
                 .status());
  for (int b = 0; b < 2; ++b) {
    auto batch = pipe.TakeOutputs();
    REQUIRE_OK(batch.status());
    kept.push_back(*std::move(batch));
  }
  for (int b = 0; b < 10; ++b) {
    INFO("batch " << 4 + b);
    CHECK(kept[b].index == 4 + b);
    CHECK(std::memcmp(kept[b].outputs[0].data.data,
                      raw->data.data() + (4 + b) * 10 * 784, 10 * 784) == 0);
  }
}

}  // namespace
}  // namespace actorflow::internal
