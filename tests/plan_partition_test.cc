// PartitionPlan places each transfer task on the thread of the task it
// serves (its kernel never blocks), unless that task's stream runs kernels
// off its thread.
#include "net/plan_partition.h"

#include <catch2/catch.hpp>
#include <map>

#include "plan/plan_builder.h"
#include "plan/plan_writer.h"

namespace actorflow::internal::net {
namespace {

StreamKeyProto On(int machine, int index, bool host_async = false) {
  StreamKeyProto stream = CpuStream(index);
  stream.set_machine_id(machine);
  stream.set_host_async(host_async);
  return stream;
}

// The stream of each transfer task of `local`, by the register it moves.
std::map<int64_t, StreamKeyProto> NetStreams(const LocalPlan& local,
                                             const char* op_type) {
  std::map<int64_t, StreamKeyProto> streams;
  for (const TaskProto& task : local.plan.task()) {
    if (task.kernel().op_type() != op_type) continue;
    int64_t reg = task.consumed_regst_desc_id().empty()
                      ? task.produced_regst_desc().at("out").regst_desc_id()
                      : task.consumed_regst_desc_id().at("in").regst_desc_id(0);
    streams[reg] = task.stream();
  }
  return streams;
}

TEST_CASE("transfer tasks share the thread of the task they serve",
          "[net][partition]") {
  PlanWriter w;
  // machine 0: a on CPU stream 3, h on host-async stream 1.
  TaskProto* a = w.AddTask("a", "source", On(0, 3));
  const int64_t from_a =
      w.AddOutput(a, "out", 2, false, {BlobProto("x", DT_FLOAT32, {4})});
  TaskProto* h = w.AddTask("h", "source", On(0, 1, /*host_async=*/true));
  const int64_t from_h =
      w.AddOutput(h, "out", 2, false, {BlobProto("y", DT_FLOAT32, {4})});
  // machine 1: b (stream 2) reads a's; c (stream 5) reads a's and h's.
  TaskProto* b = w.AddTask("b", "checksum", On(1, 2));
  w.Consume(b, "in", from_a);
  TaskProto* c = w.AddTask("c", "checksum", On(1, 5));
  w.Consume(c, "in", from_a);
  w.Consume(c, "in", from_h);

  auto sender = PartitionPlan(w.plan(), 0, 2);
  INFO(sender.status().ToString());
  REQUIRE(sender.ok());
  std::map<int64_t, StreamKeyProto> sends = NetStreams(*sender, "net_send");
  REQUIRE(sends.size() == 2);
  // a's net_send runs on a's thread.
  CHECK(sends[from_a].stream_index() == 3);
  CHECK(sends[from_a].machine_id() == 0);
  // h runs its kernels off its thread: the net_send gets a plain CPU
  // thread of its own, above every stream the machine uses.
  CHECK(sends[from_h].stream_index() == 4);
  CHECK_FALSE(sends[from_h].host_async());

  auto receiver = PartitionPlan(w.plan(), 1, 2);
  INFO(receiver.status().ToString());
  REQUIRE(receiver.ok());
  std::map<int64_t, StreamKeyProto> recvs = NetStreams(*receiver, "net_recv");
  REQUIRE(recvs.size() == 2);
  // On the thread of the first reader of each.
  CHECK(recvs[from_a].stream_index() == 2);
  CHECK(recvs[from_h].stream_index() == 5);
  CHECK(recvs[from_a].machine_id() == 0);
}

}  // namespace
}  // namespace actorflow::internal::net
