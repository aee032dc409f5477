// Multi-machine plans run as one process per machine id (actorflow launch
// and actorflow run under RANK/WORLD_SIZE), all on 127.0.0.1: the same
// results as one process, and every fault ends every rank. Random plans are
// seeded; the seed is printed and ACTORFLOW_SEED replays it.
#include <arpa/inet.h>
#include <google/protobuf/text_format.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/job_builder.h"
#include "net/job_token.h"
#include "net/launch.h"
#include "net/plan_partition.h"
#include "plan/plan_builder.h"
#include "proto/net.grpc.pb.h"
#include "tests/cli_util.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

using testing::Contains;
using testing::Field;
using testing::RunCli;

std::string WritePlan(const Plan& plan, const std::string& name) {
  std::string text;
  REQUIRE(google::protobuf::TextFormat::PrintToString(plan, &text));
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  std::ofstream(path) << text;
  return path;
}

// A process started by hand; for a rank, as mpirun or torchrun start
// them: `actorflow run PLAN ARGS` with RANK, WORLD_SIZE and MASTER_* set.
// One the test did not wait for (a check failed first) is killed with it,
// so that no rank outlives its test.
struct HandRank {
  pid_t pid = -1;
  std::string out_path;

  HandRank() = default;
  HandRank(HandRank&& other) noexcept
      : pid(std::exchange(other.pid, -1)),
        out_path(std::move(other.out_path)) {}
  HandRank& operator=(HandRank&&) = delete;
  ~HandRank() {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
  }
};

// `actorflow ARGV` with `env` added, its stdout and stderr in
// TEST_TMPDIR/NAME and NAME.err.
HandRank StartActorflow(std::vector<std::string> argv, const std::string& name,
                        const std::map<std::string, std::string>& env) {
  HandRank started;
  started.out_path = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  const std::string binary = testing::Runfile("actorflow");
  argv.insert(argv.begin(), "actorflow");
  // Output still buffered here would be written again by the child.
  fflush(nullptr);
  started.pid = fork();
  REQUIRE(started.pid >= 0);
  if (started.pid == 0) {
    const std::string err = started.out_path + ".err";
    if (freopen(started.out_path.c_str(), "w", stdout) == nullptr) _exit(126);
    if (freopen(err.c_str(), "w", stderr) == nullptr) _exit(126);
    for (const auto& [key, value] : env) setenv(key.c_str(), value.c_str(), 1);
    std::vector<char*> raw;
    for (std::string& arg : argv) raw.push_back(arg.data());
    raw.push_back(nullptr);
    execv(binary.c_str(), raw.data());
    _exit(127);
  }
  return started;
}

HandRank StartRank(const std::string& plan, int rank, int world_size, int port,
                   const std::vector<std::string>& args,
                   const std::string& name,
                   std::map<std::string, std::string> env = {}) {
  std::vector<std::string> argv = {"run", plan};
  argv.insert(argv.end(), args.begin(), args.end());
  env.emplace("RANK", std::to_string(rank));
  env.emplace("WORLD_SIZE", std::to_string(world_size));
  env.emplace("MASTER_ADDR", "127.0.0.1");
  env.emplace("MASTER_PORT", std::to_string(port));
  return StartActorflow(argv, name, env);
}

struct Finished {
  int exit_code = -1;  // -1: killed by a signal
  std::string out;
};

// Waits for `rank` to exit, for at most `within`: a rank that hangs fails
// the test with what it wrote (and is killed as it is reaped), rather than
// holding the test until Bazel's timeout says nothing.
Finished WaitRank(HandRank& rank,
                  std::chrono::seconds within = std::chrono::seconds(180)) {
  const int pidfd = static_cast<int>(syscall(SYS_pidfd_open, rank.pid, 0));
  REQUIRE(pidfd >= 0);
  pollfd exited{pidfd, POLLIN, 0};
  const int ready = poll(&exited, 1, static_cast<int>(within.count() * 1000));
  close(pidfd);
  std::ifstream out(rank.out_path);
  Finished finished;
  finished.out.assign(std::istreambuf_iterator<char>(out),
                      std::istreambuf_iterator<char>());
  if (ready != 1) {
    std::ifstream err(rank.out_path + ".err");
    const std::string errors((std::istreambuf_iterator<char>(err)),
                             std::istreambuf_iterator<char>());
    FAIL("rank " << rank.out_path << " did not exit within " << within.count()
                 << " s; stdout: " << finished.out << "\nstderr: " << errors);
  }
  int status = 0;
  REQUIRE(waitpid(rank.pid, &status, 0) == rank.pid);
  rank.pid = -1;
  if (WIFEXITED(status)) finished.exit_code = WEXITSTATUS(status);
  return finished;
}

int PortForJob() {
  const int port = net::FreePort("127.0.0.1");
  REQUIRE(port != 0);
  return port;
}

Plan Collapsed(Plan plan) {
  for (TaskProto& task : *plan.mutable_task()) {
    task.mutable_stream()->set_machine_id(0);
  }
  return plan;
}

// A random DAG of sources, scales, adds and identities, every output read,
// checksums at the ends; each task on a random machine of `machines`.
Plan RandomPlan(std::mt19937_64& rng, int machines) {
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  std::vector<TaskDef> defs;
  std::vector<std::string> producers;
  std::map<std::string, int> readers;
  const int n = uniform(3, 12);
  const int64_t elem_cnt = uniform(1, 64);
  for (int i = 0; i < n; ++i) {
    TaskDef def;
    def.name = "t" + std::to_string(i);
    def.stream_index = uniform(0, 2);
    def.register_num = uniform(1, 6);  // 4..6: credits go back in batches
    def.elem_cnt = elem_cnt;
    const int kind = producers.empty() ? 0 : uniform(0, 6);
    auto pick = [&] {
      const std::string& p = producers[uniform(0, producers.size() - 1)];
      ++readers[p];
      return p;
    };
    if (kind == 0) {
      def.op_type = "source";
      def.attrs["value"] = FloatAttr(uniform(-20, 20));
      def.attrs["step"] = FloatAttr(uniform(1, 7) / 8.0);
    } else if (kind <= 2) {
      def.op_type = "scale";
      def.attrs["factor"] = FloatAttr(uniform(1, 9) / 4.0);
      def.inputs = {pick()};
    } else if (kind <= 3) {
      def.op_type = "identity";
      def.inputs = {pick()};
    } else {
      def.op_type = "add";
      std::string a = pick();
      std::string b = pick();
      def.inputs = {a};
      if (b != a) def.inputs.push_back(b);
    }
    producers.push_back(def.name);
    defs.push_back(def);
  }
  for (const std::string& p : producers) {
    if (readers[p] > 0) continue;
    TaskDef sink{.name = "sink_" + p, .op_type = "checksum", .inputs = {p}};
    sink.has_output = false;
    sink.elem_cnt = elem_cnt;
    defs.push_back(sink);
  }
  absl::StatusOr<Plan> plan = BuildPlan(defs, uniform(0, 60));
  REQUIRE(plan.ok());
  for (TaskProto& task : *plan->mutable_task()) {
    task.mutable_stream()->set_machine_id(uniform(0, machines - 1));
  }
  // Every machine gets a task, so every rank has something to do.
  for (int m = 0; m < machines && m < plan->task_size(); ++m) {
    plan->mutable_task(m)->mutable_stream()->set_machine_id(m);
  }
  return *plan;
}

TEST_CASE("a plan over three machines gives the one-machine checksum",
          "[net]") {
  auto split = RunCli("launch --nproc=3 examples/plans/three_machines.pbtxt",
                      testing::Runfile(""));
  INFO(split.err);
  REQUIRE(split.exit_code == 0);
  auto alone =
      RunCli("run examples/plans/quickstart.pbtxt", testing::Runfile(""));
  REQUIRE(alone.exit_code == 0);
  CHECK(Field(split.last_line, "sinks") == Field(alone.last_line, "sinks"));
  CHECK(Contains(split.last_line, "\"checksum\":640640000"));
  CHECK(Contains(split.last_line, "\"world_size\":3"));
  // The same over gRPC as through shared memory (the default here).
  auto messages =
      RunCli("launch --nproc=3 examples/plans/three_machines.pbtxt --net-shm=0",
             testing::Runfile(""));
  INFO(messages.err);
  REQUIRE(messages.exit_code == 0);
  CHECK(Field(messages.last_line, "sinks") == Field(alone.last_line, "sinks"));
}

TEST_CASE("jobs over machines: the example and random jobs", "[net][job]") {
  auto split = RunCli("launch --nproc=3 examples/jobs/three_machines.pbtxt",
                      testing::Runfile(""));
  INFO(split.err);
  REQUIRE(split.exit_code == 0);
  CHECK(Contains(split.last_line, "\"checksum\":640640000"));

  // The perceptron's job over two machines against its twin over two
  // devices: the same partial sums added in the same order, so the same
  // loss to the bit.
  {
    auto two_machines = RunCli(
        "launch --nproc=2 --pieces=60 examples/jobs/mlp_two_machines.pbtxt",
        testing::Runfile(""));
    INFO(two_machines.err);
    REQUIRE(two_machines.exit_code == 0);
    auto two_devices =
        RunCli("run --pieces=60 examples/jobs/mlp_two_devices.pbtxt",
               testing::Runfile(""));
    REQUIRE(two_devices.exit_code == 0);
    CHECK(Contains(two_devices.last_line, "\"correct\":{\"pieces\":60"));
    CHECK(Field(two_machines.last_line, "sinks") ==
          Field(two_devices.last_line, "sinks"));
  }

  // Random jobs on 2-3 machines (CPU devices, data parallel where an op
  // has several): the same sinks as the job with every op on machine 0.
  std::mt19937_64 rng(testing::TestSeed("jobs over machines"));
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  for (int round = 0; round < 2; ++round) {
    const int machines = 2 + round;
    JobBuilder job(20 + pick(20));
    std::vector<std::string> names = {"src"};
    job.Op("src", "source")
        .Shape({4 + pick(5), 3})
        .Attr("value", 1.0 * pick(5));
    for (int m = 0; m < 5; ++m) {
      const std::string name = "op" + std::to_string(m);
      std::vector<int32_t> where = {pick(machines)};
      if (pick(2)) where.push_back((where[0] + 1) % machines);
      auto op = job.Op(name, pick(2) ? "scale" : "add")
                    .Input(names[pick(static_cast<int>(names.size()))])
                    .Place(DeviceKind::kCpu, {pick(2)}, where);
      if (op.conf()->op_type() == "scale") {
        op.Attr("factor", 2.0);
      } else {
        op.Input(names[pick(static_cast<int>(names.size()))]);
      }
      names.push_back(name);
    }
    for (const std::string& name : names) {
      job.Op("sink." + name, "checksum")
          .Input(name)
          .Place(DeviceKind::kCpu, {0}, {pick(machines)});
    }
    Job collapsed = job.job();
    for (OpConf& op : *collapsed.mutable_op()) {
      op.mutable_placement()->clear_machine_id();
    }
    auto write = [](const std::string& name, const Job& j) {
      std::string text;
      google::protobuf::TextFormat::PrintToString(j, &text);
      const std::string path =
          std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
      std::ofstream(path) << text;
      return path;
    };
    const std::string over = write("job_split.pbtxt", job.job());
    const std::string alone = write("job_alone.pbtxt", collapsed);
    auto launched = RunCli("launch --nproc=" + std::to_string(machines) + " '" +
                           over + "'");
    INFO(launched.err);
    REQUIRE(launched.exit_code == 0);
    auto one = RunCli("run '" + alone + "'");
    REQUIRE(one.exit_code == 0);
    CHECK(Field(launched.last_line, "sinks") == Field(one.last_line, "sinks"));
  }
}

TEST_CASE("random plans split over 2-4 machines match the collapsed plan",
          "[net][random]") {
  std::mt19937_64 rng(testing::TestSeed("split plans"));
  for (int round = 0; round < 4; ++round) {
    const int machines = 2 + round % 3;
    Plan plan = RandomPlan(rng, machines);
    const std::string split_path =
        WritePlan(plan, "split" + std::to_string(round) + ".pbtxt");
    const std::string one_path =
        WritePlan(Collapsed(plan), "one" + std::to_string(round) + ".pbtxt");
    absl::StatusOr<std::vector<net::NetEdge>> edges =
        net::FindNetEdges(plan, machines);
    REQUIRE(edges.ok());
    INFO("round " << round << ", " << machines << " machines, " << edges->size()
                  << " crossing edges, plan " << split_path);
    auto one = RunCli("run '" + one_path + "'");
    REQUIRE(one.exit_code == 0);
    auto split = RunCli("launch --nproc=" + std::to_string(machines) + " '" +
                        split_path + "' --peer-timeout=20");
    INFO(split.err);
    REQUIRE(split.exit_code == 0);
    CHECK(Field(split.last_line, "sinks") == Field(one.last_line, "sinks"));
  }
}

// source(m0) -> fail(m1, at piece 7) -> checksum(m0).
// src (machine 0) -> `middle` (machine 1) -> sink (machine `sink_machine`),
// `pieces` of them.
Plan ChainPlan(TaskDef middle, int sink_machine, int64_t pieces) {
  middle.inputs = {"src"};
  std::vector<TaskDef> defs = {
      {.name = "src", .op_type = "source"},
      middle,
      {.name = "sink", .op_type = "checksum", .inputs = {middle.name}}};
  defs[0].attrs["value"] = FloatAttr(1);
  defs[2].has_output = false;
  absl::StatusOr<Plan> plan = BuildPlan(defs, pieces);
  REQUIRE(plan.ok());
  plan->mutable_task(1)->mutable_stream()->set_machine_id(1);
  plan->mutable_task(2)->mutable_stream()->set_machine_id(sink_machine);
  return *plan;
}

Plan FailingPlan() {
  TaskDef boom{.name = "boom", .op_type = "fail"};
  boom.attrs["at_piece"] = IntAttr(7);
  return ChainPlan(boom, /*sink_machine=*/0, 50);
}

TEST_CASE("a kernel failure on one rank ends every rank, naming task and piece",
          "[net]") {
  const std::string path = WritePlan(FailingPlan(), "failing.pbtxt");
  auto launched = RunCli("launch --nproc=2 '" + path + "'");
  INFO(launched.last_line);
  CHECK(launched.exit_code == 1);
  CHECK(Contains(launched.last_line, "\"status\":\"error\""));
  CHECK(Contains(launched.last_line, "boom"));
  CHECK(Contains(launched.last_line, "piece 7"));
  // Each rank by hand, as mpirun or torchrun would start them.
  const int port = PortForJob();
  HandRank rank1 = StartRank(path, 1, 2, port, {}, "failing_rank1");
  HandRank rank0 = StartRank(path, 0, 2, port, {}, "failing_rank0");
  Finished zero = WaitRank(rank0);
  Finished one = WaitRank(rank1);
  INFO(zero.out);
  INFO(one.out);
  CHECK(zero.exit_code == 1);
  CHECK(Contains(zero.out, "\"rank\":0"));
  CHECK(Contains(zero.out, "rank 1 failed"));
  CHECK(Contains(zero.out, "boom"));
  CHECK(Contains(zero.out, "piece 7"));
  CHECK(one.exit_code == 1);
  CHECK(Contains(one.out, "\"rank\":1"));
  CHECK(Contains(one.out, "boom"));
  CHECK(Contains(one.out, "piece 7"));
}

// Polls (for up to a minute) the progress lines that `rank` writes once a
// second (run --progress) until one says its sinks took a piece; with
// `any_line`, until the first line at all (the run has started).
bool AwaitProgress(const HandRank& rank, bool any_line = false) {
  for (int polls = 0; polls < 6000; ++polls) {
    std::ifstream err(rank.out_path + ".err");
    std::string line;
    while (std::getline(err, line)) {
      if (line.rfind("progress: ", 0) != 0) continue;
      if (any_line || line.rfind("progress: 0/", 0) != 0) return true;
    }
    usleep(10000);  // polls a file the rank writes
  }
  return false;
}

// Three ranks of source(m0) -> a slow stage(m1) -> sink(m2), started by
// hand with `peer_timeout_s`; returns once the job is running: rank 2's
// sink has taken pieces, as its progress line (once a second) says.
std::vector<HandRank> StartRunningJob(const std::string& name,
                                      int peer_timeout_s) {
  TaskDef slow{.name = "slow", .op_type = "spin"};
  slow.attrs["us"] = IntAttr(20000);
  const std::string path =
      WritePlan(ChainPlan(slow, /*sink_machine=*/2, 100000), name + ".pbtxt");
  const int port = PortForJob();
  std::vector<HandRank> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(StartRank(
        path, r, 3, port,
        {"--peer-timeout=" + std::to_string(peer_timeout_s), "--progress"},
        name + "_rank" + std::to_string(r)));
  }
  REQUIRE(AwaitProgress(ranks[2]));
  return ranks;
}

// Ranks 0 and 2 exit 1 within `within_s` of `since`, naming rank 1.
void ExpectOthersFail(std::vector<HandRank>& ranks,
                      std::chrono::steady_clock::time_point since,
                      double within_s, const std::string& why) {
  for (int r : {0, 2}) {
    Finished finished = WaitRank(ranks[r]);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
            .count();
    INFO("rank " << r << " exited after " << seconds << " s: " << finished.out);
    CHECK(finished.exit_code == 1);
    CHECK(seconds < within_s);
    CHECK(Contains(finished.out, "rank 1"));
    if (r == 0) CHECK(Contains(finished.out, why));
  }
}

TEST_CASE("killing a rank mid-run fails the others within the peer timeout",
          "[net]") {
  std::vector<HandRank> ranks = StartRunningJob("killed", 5);
  const auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(kill(ranks[1].pid, SIGKILL) == 0);
  // Rank 0 hears of it when rank 1's stream breaks, rank 2 from rank 0:
  // both well within the peer timeout (5 s) and launch's margin.
  ExpectOthersFail(ranks, killed_at, 5 + 10, "exited or lost its connection");
  CHECK(WaitRank(ranks[1]).exit_code == -1);
}

TEST_CASE("a rank that stops answering fails the others after the peer timeout",
          "[net]") {
  std::vector<HandRank> ranks = StartRunningJob("stopped", 2);
  const auto stopped_at = std::chrono::steady_clock::now();
  REQUIRE(kill(ranks[1].pid, SIGSTOP) == 0);
  ExpectOthersFail(ranks, stopped_at, 2 + 10, "stopped answering");
  REQUIRE(kill(ranks[1].pid, SIGKILL) == 0);
  CHECK(WaitRank(ranks[1]).exit_code == -1);
}

// Rank 0 sends 4 MB pieces over gRPC (no shared memory) from their
// registers, 8 in flight, more than the sockets buffer: once rank 1 stops,
// rank 0's writes stall with its registers in gRPC's hands. The peer
// timeout fails the job, the failure cancels the stream, gRPC lets go of
// the registers, and rank 0 ends rather than waiting for them.
TEST_CASE("a rank that stops under pieces sent from their registers", "[net]") {
  std::vector<TaskDef> defs = {
      {.name = "src", .op_type = "source"},
      {.name = "sink", .op_type = "checksum", .inputs = {"src"}}};
  defs[0].register_num = 8;
  defs[0].elem_cnt = 1 << 20;
  defs[1].has_output = false;
  absl::StatusOr<Plan> plan = BuildPlan(defs, 1'000'000);
  REQUIRE(plan.ok());
  plan->mutable_task(1)->mutable_stream()->set_machine_id(1);
  const std::string path = WritePlan(*plan, "held_stop.pbtxt");
  const int port = PortForJob();
  std::vector<HandRank> ranks;
  for (int r = 0; r < 2; ++r) {
    ranks.push_back(StartRank(path, r, 2, port,
                              {"--peer-timeout=2", "--net-shm=0", "--progress"},
                              "held_stop_rank" + std::to_string(r)));
  }
  REQUIRE(AwaitProgress(ranks[1]));
  const auto stopped_at = std::chrono::steady_clock::now();
  REQUIRE(kill(ranks[1].pid, SIGSTOP) == 0);
  Finished zero = WaitRank(ranks[0]);
  const double seconds = std::chrono::duration<double>(
                             std::chrono::steady_clock::now() - stopped_at)
                             .count();
  INFO("rank 0 exited after " << seconds << " s: " << zero.out);
  CHECK(zero.exit_code == 1);
  CHECK(seconds < 2 + 10);
  CHECK(Contains(zero.out, "rank 1"));
  REQUIRE(kill(ranks[1].pid, SIGKILL) == 0);
  CHECK(WaitRank(ranks[1]).exit_code == -1);
}

TEST_CASE("a rank that never joins fails rank 0 after the join timeout",
          "[net]") {
  const std::string path = WritePlan(FailingPlan(), "lonely.pbtxt");
  HandRank rank0 =
      StartRank(path, 0, 2, PortForJob(), {"--join-timeout=1"}, "lonely0");
  Finished zero = WaitRank(rank0);
  INFO(zero.out);
  CHECK(zero.exit_code == 1);
  CHECK(Contains(zero.out, "rank 1 did not join within 1s"));
}

TEST_CASE("ranks that loaded different plans are refused, naming them",
          "[net]") {
  Plan plan = FailingPlan();
  (*plan.mutable_task(1)->mutable_kernel()->mutable_attr())["at_piece"].set_i(
      1000);
  const std::string path = WritePlan(plan, "mismatch.pbtxt");
  const int port = PortForJob();
  HandRank rank1 = StartRank(path, 1, 2, port, {"--pieces=9"}, "mismatch1");
  HandRank rank0 = StartRank(path, 0, 2, port, {"--pieces=10"}, "mismatch0");
  Finished zero = WaitRank(rank0);
  Finished one = WaitRank(rank1);
  INFO(zero.out);
  INFO(one.out);
  CHECK(zero.exit_code == 1);
  CHECK(Contains(zero.out, "plan mismatch"));
  CHECK(Contains(zero.out, "rank 1"));
  // Rank 1 hears the refusal too, rather than waiting out a timeout.
  CHECK(one.exit_code == 1);
  CHECK(Contains(one.out, "plan mismatch"));
}

// A client of a job's services that knows its port but not its token.
class Intruder {
 public:
  explicit Intruder(int port, int deadline_s = 30)
      : channel_(grpc::CreateChannel(absl::StrCat("127.0.0.1:", port),
                                     grpc::InsecureChannelCredentials())),
        deadline_s_(deadline_s) {}

  // Each call waits for the server (rank 0 may still be starting).
  void Prepare(grpc::ClientContext* context) {
    context->set_wait_for_ready(true);
    context->set_deadline(std::chrono::system_clock::now() +
                          std::chrono::seconds(deadline_s_));
  }
  grpc::Status Join() {
    auto stub = net::Control::NewStub(channel_);
    grpc::ClientContext context;
    Prepare(&context);
    net::JoinRequest request;
    request.set_rank(1);
    request.set_world_size(3);
    request.set_address("127.0.0.1:1");
    net::JoinReply reply;
    return stub->Join(&context, request, &reply);
  }
  grpc::Status Barrier() {
    auto stub = net::Control::NewStub(channel_);
    grpc::ClientContext context;
    Prepare(&context);
    net::BarrierRequest request;
    request.set_rank(1);
    request.set_name("end");
    net::BarrierReply reply;
    return stub->Barrier(&context, request, &reply);
  }
  // A beat saying rank 1 failed: were it taken, the job would end.
  grpc::Status Beat() {
    auto stub = net::Control::NewStub(channel_);
    grpc::ClientContext context;
    Prepare(&context);
    auto stream = stub->Watch(&context);
    net::Beat beat;
    beat.set_rank(1);
    beat.set_failure("forged");
    stream->Write(beat);
    stream->WritesDone();
    return stream->Finish();
  }
  // A register stream opened before its sender's.
  grpc::Status Push(int64_t regst_desc_id, int32_t src_rank) {
    auto stub = net::RegisterTransfer::NewStub(channel_);
    grpc::ClientContext context;
    Prepare(&context);
    auto stream = stub->Push(&context);
    net::RegisterPiece header;
    header.set_regst_desc_id(regst_desc_id);
    header.set_piece_id(-1);
    header.set_src_rank(src_rank);
    stream->Write(header);
    stream->WritesDone();
    return stream->Finish();
  }

 private:
  std::shared_ptr<grpc::Channel> channel_;
  const int deadline_s_;
};

TEST_CASE("a job's token keeps out forged calls and other jobs' ranks",
          "[net][security]") {
  const std::string plan =
      testing::Runfile("examples/plans/three_machines.pbtxt");
  auto whole = RunCli("launch --nproc=3 '" + plan + "'");
  REQUIRE(whole.exit_code == 0);
  const int port = PortForJob();
  const std::map<std::string, std::string> job = {
      {"ACTORFLOW_JOB_TOKEN", "0123456789abcdef0123456789abcdef"}};
  HandRank rank0 = StartRank(plan, 0, 3, port, {}, "token_rank0", job);
  Intruder intruder(port);
  for (auto [what, status] : std::vector<std::pair<std::string, grpc::Status>>{
           {"Join", intruder.Join()},
           {"Barrier", intruder.Barrier()},
           {"Watch", intruder.Beat()},
           {"Push", intruder.Push(/*regst_desc_id=*/1, /*src_rank=*/1)}}) {
    INFO(what << ": " << status.error_message());
    CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    CHECK(Contains(status.error_message(), what + ": refused a call"));
  }
  // A rank of another job, same plan and port: refused, and it says why.
  HandRank other = StartRank(plan, 1, 3, port, {}, "token_other",
                             {{"ACTORFLOW_JOB_TOKEN", "another"}});
  Finished refused = WaitRank(other);
  INFO(refused.out);
  CHECK(refused.exit_code == 1);
  CHECK(Contains(refused.out, "another job's token"));
  // The same token under another job id: refused alone too.
  std::map<std::string, std::string> renamed = job;
  renamed["ACTORFLOW_JOB_ID"] = "job-b";
  HandRank stray = StartRank(plan, 1, 3, port, {}, "token_stray", renamed);
  Finished strayed = WaitRank(stray);
  INFO(strayed.out);
  CHECK(strayed.exit_code == 1);
  CHECK(Contains(strayed.out, "belongs to job 'job-b'"));
  // The job itself goes on to the one-process sinks.
  HandRank rank1 = StartRank(plan, 1, 3, port, {}, "token_rank1", job);
  HandRank rank2 = StartRank(plan, 2, 3, port, {}, "token_rank2", job);
  Finished zero = WaitRank(rank0);
  INFO(zero.out);
  CHECK(zero.exit_code == 0);
  CHECK(WaitRank(rank1).exit_code == 0);
  CHECK(WaitRank(rank2).exit_code == 0);
  CHECK(Field(zero.out, "checksum") == Field(whole.last_line, "checksum"));
}

// A CA, and a certificate it signed for 127.0.0.1, under TEST_TMPDIR/NAME;
// made with openssl as a user would make them.
std::string MakeCertificates(const std::string& name) {
  const std::string dir = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  const std::string script = absl::StrCat(
      "mkdir -p '", dir, "' && cd '", dir,
      "' && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out "
      "ca.pem -days 2 -subj /CN=",
      name,
      "-ca 2>/dev/null && openssl req -newkey rsa:2048 -nodes -keyout "
      "rank.key -out rank.csr -subj /CN=localhost 2>/dev/null && echo "
      "subjectAltName=IP:127.0.0.1,DNS:localhost > ext.cnf && openssl x509 "
      "-req -in rank.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out "
      "rank.pem -days 2 -extfile ext.cnf 2>/dev/null");
  REQUIRE(std::system(script.c_str()) == 0);
  return dir;
}

std::vector<std::string> TlsFlags(const std::string& dir) {
  return {"--tls-cert=" + dir + "/rank.pem", "--tls-key=" + dir + "/rank.key",
          "--tls-ca=" + dir + "/ca.pem"};
}

TEST_CASE("mutual TLS between ranks: the job runs, strangers are refused",
          "[net][security]") {
  // Under ASan: OpenSSL's per-thread state left by gRPC's TLS threads at
  // exit is not a leak of ours (tools/lsan_suppressions.txt).
  const std::string suppressions =
      "suppressions=" + testing::Runfile("tools/lsan_suppressions.txt");
  setenv("LSAN_OPTIONS", suppressions.c_str(), /*overwrite=*/1);
  const std::string plan =
      testing::Runfile("examples/plans/three_machines.pbtxt");
  auto whole = RunCli("launch --nproc=3 '" + plan + "'");
  REQUIRE(whole.exit_code == 0);
  const std::string ours = MakeCertificates("tls_ours");
  const std::string theirs = MakeCertificates("tls_theirs");
  const std::vector<std::string> flags = TlsFlags(ours);
  const std::string tls = flags[0] + " " + flags[1] + " " + flags[2];
  auto launched = RunCli("launch --nproc=3 '" + plan + "' " + tls);
  INFO(launched.err);
  CHECK(launched.exit_code == 0);
  CHECK(Field(launched.last_line, "checksum") ==
        Field(whole.last_line, "checksum"));
  // By hand: a plaintext client and a rank whose certificate another CA
  // signed get nowhere; the job's own ranks finish it.
  const int port = PortForJob();
  HandRank rank0 = StartRank(plan, 0, 3, port, flags, "tls_rank0");
  // A plaintext client never gets a connection (its handshake fails).
  grpc::Status plain = Intruder(port, /*deadline_s=*/3).Join();
  CHECK(plain.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
  std::vector<std::string> stranger_flags = TlsFlags(theirs);
  stranger_flags.push_back("--join-timeout=2");
  HandRank stranger =
      StartRank(plan, 1, 3, port, stranger_flags, "tls_stranger");
  Finished refused = WaitRank(stranger);
  INFO(refused.out);
  CHECK(refused.exit_code == 1);
  CHECK(Contains(refused.out, "cannot reach rank 0"));
  HandRank rank1 = StartRank(plan, 1, 3, port, flags, "tls_rank1");
  HandRank rank2 = StartRank(plan, 2, 3, port, flags, "tls_rank2");
  Finished zero = WaitRank(rank0);
  INFO(zero.out);
  CHECK(zero.exit_code == 0);
  CHECK(WaitRank(rank1).exit_code == 0);
  CHECK(WaitRank(rank2).exit_code == 0);
  CHECK(Field(zero.out, "checksum") == Field(whole.last_line, "checksum"));
  // Half the files, or a file that is not PEM: refused before any rank.
  auto half = RunCli("launch --nproc=3 '" + plan + "' " + flags[0]);
  CHECK(half.exit_code == 2);
  CHECK(Contains(half.last_line, "TLS needs all three of --tls-cert"));
  auto not_pem = RunCli("launch --nproc=3 '" + plan + "' --tls-cert=" + ours +
                        "/ext.cnf " + flags[1] + " " + flags[2]);
  CHECK(not_pem.exit_code == 2);
  CHECK(Contains(not_pem.last_line, "ext.cnf is not a PEM file"));
}

TEST_CASE("launch keeps each rank's output in --log-dir and marks its stderr",
          "[net]") {
  const std::string plan =
      testing::Runfile("examples/plans/three_machines.pbtxt");
  const std::string dir =
      std::string(std::getenv("TEST_TMPDIR")) + "/launch_logs";
  auto r = RunCli("launch --nproc=3 --log-dir='" + dir + "' '" + plan + "'");
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Field(r.last_line, "restarts") == "0");
  for (int rank = 0; rank < 3; ++rank) {
    const std::string mark = "[rank " + std::to_string(rank) + "] actorflow: ";
    CHECK(Contains(r.err, mark));
    std::ifstream out(dir + "/rank-" + std::to_string(rank) + ".out");
    const std::string text((std::istreambuf_iterator<char>(out)),
                           std::istreambuf_iterator<char>());
    CHECK(Contains(text, "\"rank\":" + std::to_string(rank)));
    std::ifstream err(dir + "/rank-" + std::to_string(rank) + ".err");
    const std::string said((std::istreambuf_iterator<char>(err)),
                           std::istreambuf_iterator<char>());
    CHECK(Contains(said, "actorflow: "));
    CHECK_FALSE(Contains(said, "[rank "));
  }
}

TEST_CASE("launch --max-restarts starts a failing job again, then says so",
          "[net]") {
  const std::string path = WritePlan(FailingPlan(), "failing_restarts.pbtxt");
  auto r = RunCli(
      "launch --nproc=2 --max-restarts=2 "
      "--restart-backoff-scale=0.01 '" +
      path + "'");
  INFO(r.err);
  INFO(r.last_line);
  CHECK(r.exit_code == 1);
  CHECK(Field(r.last_line, "restarts") == "2");
  CHECK(
      Contains(r.last_line, "the job failed 3 times (2 restarts), each time:"));
  CHECK(Contains(r.last_line, "boom"));
  CHECK(Contains(r.err, "restart 1 of 2"));
  CHECK(Contains(r.err, "restart 2 of 2"));
}

// Polls (a file the ranks write, not synchronization) until rank `rank`
// has a checkpoint under `dir`.
void AwaitCheckpoint(const std::string& dir, int rank) {
  const std::string root = dir + "/rank-" + std::to_string(rank);
  for (int polls = 0; polls < 6000; ++polls) {
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator(root, error)) {
      if (entry.path().filename().string().rfind("ckpt-", 0) == 0) return;
    }
    usleep(10000);
  }
  FAIL("no checkpoint under " << root << " within 60 s");
}

TEST_CASE(
    "SIGTERM to one rank preempts the job at one cut; --resume ends it "
    "bit for bit",
    "[net][preempt]") {
  const std::string plan =
      testing::Runfile("examples/plans/three_machines.pbtxt");
  const std::string dir =
      std::string(std::getenv("TEST_TMPDIR")) + "/preempt_ckpt";
  const std::vector<std::string> args = {
      "--pieces=200000", "--checkpoint-dir=" + dir, "--checkpoint-every=5000"};
  const int port = PortForJob();
  std::vector<HandRank> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(
        StartRank(plan, r, 3, port, args, "preempt" + std::to_string(r)));
  }
  AwaitCheckpoint(dir, 1);
  const auto signalled = std::chrono::steady_clock::now();
  REQUIRE(kill(ranks[1].pid, SIGTERM) == 0);
  std::string cut;
  for (int r = 0; r < 3; ++r) {
    Finished finished = WaitRank(ranks[r]);
    INFO("rank " << r << ": " << finished.out);
    CHECK(finished.exit_code == 3);
    CHECK(Contains(finished.out, "\"status\":\"preempted\""));
    CHECK(Contains(finished.out, "\"reason\":\"SIGTERM to rank 1\""));
    // Every rank stopped at the same piece and checkpointed there.
    const std::string at = Field(finished.out, "preempted_at");
    if (r == 0) cut = at;
    CHECK(at == cut);
    CHECK(Field(finished.out, "checkpoint") == cut);
    CHECK(std::filesystem::exists(dir + "/rank-" + std::to_string(r) +
                                  "/ckpt-" + std::string(12 - cut.size(), '0') +
                                  cut));
  }
  // Well within the default grace (25 s).
  CHECK(std::chrono::steady_clock::now() - signalled <
        std::chrono::seconds(25));
  REQUIRE(std::stoll(cut) < 200000);
  auto resumed = RunCli("launch --nproc=3 '" + plan + "' --resume " + args[0] +
                        " " + args[1] + " " + args[2]);
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  CHECK(Field(resumed.last_line, "resumed_from") == cut);
  auto alone = RunCli("run examples/plans/quickstart.pbtxt --pieces=200000",
                      testing::Runfile(""));
  REQUIRE(alone.exit_code == 0);
  CHECK(Field(resumed.last_line, "sinks") == Field(alone.last_line, "sinks"));
}

TEST_CASE("SIGUSR1 to launch preempts its job; no restart follows",
          "[net][preempt]") {
  const std::string plan =
      testing::Runfile("examples/plans/three_machines.pbtxt");
  const std::string dir =
      std::string(std::getenv("TEST_TMPDIR")) + "/preempt_launch";
  HandRank launch = StartActorflow(
      {"launch", "--nproc=3", "--max-restarts=2", plan, "--pieces=200000",
       "--checkpoint-dir=" + dir, "--checkpoint-every=5000"},
      "preempt_launch_out", {});
  AwaitCheckpoint(dir, 2);
  REQUIRE(kill(launch.pid, SIGUSR1) == 0);
  Finished finished = WaitRank(launch);
  INFO(finished.out);
  CHECK(finished.exit_code == 3);
  CHECK(Contains(finished.out, "\"status\":\"preempted\""));
  CHECK(Contains(finished.out, "SIGUSR1 to rank"));
  CHECK(Contains(finished.out, "\"restarts\":0"));
  CHECK(Contains(finished.out, "\"sinks\":{\"sink\""));
}

TEST_CASE("a preempted job that cannot reach its cut within the grace fails",
          "[net][preempt]") {
  // The middle stage spends 30 s on one piece: no cut is reached in 1 s.
  TaskDef stuck{.name = "stuck", .op_type = "spin"};
  stuck.attrs["us"] = IntAttr(30000000);
  const std::string path =
      WritePlan(ChainPlan(stuck, /*sink_machine=*/2, 10), "stuck.pbtxt");
  const int port = PortForJob();
  std::vector<HandRank> ranks;
  for (int r = 0; r < 3; ++r) {
    ranks.push_back(StartRank(path, r, 3, port,
                              {"--preempt-grace=1", "--progress"},
                              "stuck" + std::to_string(r)));
  }
  // Running: rank 1's stage has begun its piece, as its progress says.
  REQUIRE(AwaitProgress(ranks[0], /*any_line=*/true));
  const auto signalled = std::chrono::steady_clock::now();
  REQUIRE(kill(ranks[0].pid, SIGTERM) == 0);
  for (int r = 0; r < 3; ++r) {
    Finished finished = WaitRank(ranks[r]);
    INFO("rank " << r << ": " << finished.out);
    CHECK(finished.exit_code == 1);
    CHECK(Contains(finished.out,
                   "did not reach its cut and checkpoint within "
                   "--preempt-grace=1s"));
  }
  CHECK(std::chrono::steady_clock::now() - signalled <
        std::chrono::seconds(20));
}

TEST_CASE("a job where no rank acts fails with every rank's waits",
          "[net][hang]") {
  // Rank 1's stage spends 30 s on its first piece: nothing moves anywhere.
  TaskDef stuck{.name = "stuck", .op_type = "spin"};
  stuck.attrs["us"] = IntAttr(30000000);
  const std::string path =
      WritePlan(ChainPlan(stuck, /*sink_machine=*/2, 10), "hung.pbtxt");
  const auto started = std::chrono::steady_clock::now();
  auto r = RunCli("launch --nproc=3 '" + path + "' --hang-timeout=2");
  INFO(r.err);
  INFO(r.last_line);
  CHECK(r.exit_code == 1);
  CHECK(std::chrono::steady_clock::now() - started < std::chrono::seconds(20));
  CHECK(Contains(r.last_line, "the job is hung: no rank acted for "));
  CHECK(Contains(r.last_line, "(--hang-timeout 2s)"));
  // Each rank's own account: the stuck kernel, and the edges around it.
  CHECK(Contains(r.last_line, "--- rank 1:"));
  CHECK(Contains(r.last_line, "task 'stuck'"));
  CHECK(Contains(r.last_line, "its kernel is running"));
  CHECK(Contains(r.last_line, "to rank 1: 2 pieces sent"));
  CHECK(Contains(r.last_line, "from rank 1: 0 pieces received"));
  CHECK(Contains(r.last_line, "(waiting for rank 1 to send)"));
  // Every rank says so.
  for (int rank = 0; rank < 3; ++rank) {
    CHECK(Contains(r.err, "[rank " + std::to_string(rank) +
                              "] actorflow: run failed: the job is hung"));
  }
}

// source@0 -> hop1@1 -> ... -> hop(n-1)@(n-1) -> sink@0: every rank's
// edge to the next; hop1 spends `spin_us` a piece.
Plan RingPlan(int n, int64_t pieces, int spin_us) {
  std::vector<TaskDef> defs = {{.name = "src", .op_type = "source"}};
  defs[0].attrs["value"] = FloatAttr(1);
  for (int m = 1; m < n; ++m) {
    TaskDef hop{.name = "hop" + std::to_string(m),
                .op_type = m == 1 && spin_us > 0 ? "spin" : "identity",
                .inputs = {defs.back().name}};
    if (m == 1 && spin_us > 0) hop.attrs["us"] = IntAttr(spin_us);
    defs.push_back(hop);
  }
  defs.push_back(
      {.name = "sink", .op_type = "checksum", .inputs = {defs.back().name}});
  defs.back().has_output = false;
  absl::StatusOr<Plan> plan = BuildPlan(defs, pieces);
  REQUIRE(plan.ok());
  for (int m = 1; m < n; ++m) {
    plan->mutable_task(m)->mutable_stream()->set_machine_id(m);
  }
  return *plan;
}

// A source on each rank 1..n-1, each read by its own checksum on rank 0.
Plan FanInPlan(int n, int64_t pieces) {
  std::vector<TaskDef> defs;
  for (int m = 1; m < n; ++m) {
    TaskDef src{.name = "src" + std::to_string(m), .op_type = "source"};
    src.attrs["value"] = FloatAttr(m);
    TaskDef sink{.name = "sink" + std::to_string(m),
                 .op_type = "checksum",
                 .inputs = {src.name}};
    sink.has_output = false;
    defs.push_back(src);
    defs.push_back(sink);
  }
  absl::StatusOr<Plan> plan = BuildPlan(defs, pieces);
  REQUIRE(plan.ok());
  for (int m = 1; m < n; ++m) {
    plan->mutable_task(2 * (m - 1))->mutable_stream()->set_machine_id(m);
  }
  return *plan;
}

// `ranks` processes under launch: they join, run 200 pieces and end.
void RunWideJob(const std::string& name, const Plan& plan, int ranks) {
  const std::string path = WritePlan(plan, name + ".pbtxt");
  const std::string logs = std::string(std::getenv("TEST_TMPDIR")) + "/" + name;
  const auto started = std::chrono::steady_clock::now();
  auto r = RunCli("launch --nproc=" + std::to_string(ranks) + " --log-dir='" +
                  logs + "' '" + path + "' --stats");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started)
          .count();
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.last_line, "\"world_size\":" + std::to_string(ranks)));
  CHECK(Contains(r.last_line, "\"pieces\":200,\"checksum\":"));
  // The processes start, join, run 200 pieces and leave: a few seconds
  // here, bounded loosely for a loaded machine.
  CHECK(seconds < 60);
  std::ifstream out(logs + "/rank-0.out");
  const std::string line((std::istreambuf_iterator<char>(out)),
                         std::istreambuf_iterator<char>());
  CHECK(Contains(line, "\"join_ms\":"));
  CHECK(Contains(line, "\"threads\":"));
  const size_t job = line.find("\"job\":");
  WARN(name << ": " << seconds << " s; rank 0: "
            << (job == std::string::npos ? "" : line.substr(job)));
}

TEST_CASE(
    "32 and 64 ranks in a ring and a fan-in join, run and end on two "
    "cores",
    "[net][scale]") {
  for (int ranks : {32, 64}) {
    for (const auto& [name, plan] :
         {std::pair{"ring" + std::to_string(ranks), RingPlan(ranks, 200, 0)},
          std::pair{"fanin" + std::to_string(ranks), FanInPlan(ranks, 200)}}) {
      INFO(name);
      RunWideJob(name, plan, ranks);
    }
  }
}

TEST_CASE("a random rank of 64 killed fails every rank within the peer timeout",
          "[net][scale]") {
  const uint64_t seed = testing::TestSeed("ring64 kill");
  std::mt19937_64 rng(seed);
  const int victim = std::uniform_int_distribution<int>(1, 63)(rng);
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it); rank " << victim);
  const std::string path =
      WritePlan(RingPlan(64, 100000, 20000), "ring64_kill.pbtxt");
  const int port = PortForJob();
  std::vector<HandRank> ranks;
  for (int r = 0; r < 64; ++r) {
    std::vector<std::string> args = {"--peer-timeout=5"};
    if (r == 0) args.push_back("--progress");
    ranks.push_back(
        StartRank(path, r, 64, port, args, "ring64_" + std::to_string(r)));
  }
  REQUIRE(AwaitProgress(ranks[0]));  // rank 0's sink has taken pieces
  const auto killed_at = std::chrono::steady_clock::now();
  REQUIRE(kill(ranks[victim].pid, SIGKILL) == 0);
  for (int r = 0; r < 64; ++r) {
    Finished finished = WaitRank(ranks[r]);
    if (r == victim) {
      CHECK(finished.exit_code == -1);
      continue;
    }
    INFO("rank " << r << ": " << finished.out);
    CHECK(finished.exit_code == 1);
    CHECK(Contains(finished.out, "rank " + std::to_string(victim)));
  }
  // Every rank has gone within the peer timeout (and the time 63 processes
  // take to wind down on two cores).
  CHECK(std::chrono::steady_clock::now() - killed_at <
        std::chrono::seconds(5 + 10));
}

TEST_CASE("launch on two nodes: one job of both nodes' ranks", "[net]") {
  // src@0 -> a@1 -> b@2 -> sink@0 and far_sink@3: node 0's line has both
  // sinks, though node 1 ran far_sink.
  std::vector<TaskDef> defs = {
      {.name = "src", .op_type = "source"},
      {.name = "a", .op_type = "identity", .inputs = {"src"}},
      {.name = "b", .op_type = "identity", .inputs = {"a"}},
      {.name = "sink", .op_type = "checksum", .inputs = {"b"}},
      {.name = "far_sink", .op_type = "checksum", .inputs = {"b"}}};
  defs[0].attrs["value"] = FloatAttr(1);
  defs[3].has_output = false;
  defs[4].has_output = false;
  absl::StatusOr<Plan> two_sinks = BuildPlan(defs, 500);
  REQUIRE(two_sinks.ok());
  for (int t : {1, 2})
    two_sinks->mutable_task(t)->mutable_stream()->set_machine_id(t);
  two_sinks->mutable_task(4)->mutable_stream()->set_machine_id(3);
  const std::string plan = WritePlan(*two_sinks, "two_sinks.pbtxt");
  auto whole = RunCli("launch --nproc=4 '" + plan + "'");
  REQUIRE(whole.exit_code == 0);
  const std::string port = std::to_string(PortForJob());
  std::vector<HandRank> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(StartActorflow(
        {"launch", "--nnodes=2", "--node-rank=" + std::to_string(node),
         "--nproc-per-node=2", "--master-addr=127.0.0.1",
         "--master-port=" + port, plan},
        "node" + std::to_string(node),
        {{"ACTORFLOW_JOB_TOKEN", "the-same-on-both"}}));
  }
  Finished zero = WaitRank(nodes[0]);
  Finished one = WaitRank(nodes[1]);
  INFO(zero.out);
  INFO(one.out);
  CHECK(zero.exit_code == 0);
  CHECK(one.exit_code == 0);
  CHECK(Field(zero.out, "world_size") == "4");
  // Node 0 reports the whole job's sinks, node 1's among them.
  CHECK(Field(zero.out, "sinks") == Field(whole.last_line, "sinks"));
  CHECK(Contains(Field(zero.out, "sinks"), "far_sink"));
  CHECK(Contains(Field(zero.out, "sinks"), "\"sink\""));
  std::ifstream err(nodes[1].out_path + ".err");
  const std::string said((std::istreambuf_iterator<char>(err)),
                         std::istreambuf_iterator<char>());
  CHECK(Contains(said, "[rank 2] "));
  CHECK(Contains(said, "[rank 3] "));
  // Several nodes need one secret and the master's address.
  auto no_token = RunCli(
      "launch --nnodes=2 --nproc=1 --master-addr=127.0.0.1 '" + plan + "'", ".",
      "ACTORFLOW_JOB_TOKEN= ");
  CHECK(no_token.exit_code == 2);
  CHECK(Contains(no_token.last_line, "needs ACTORFLOW_JOB_TOKEN"));
  auto no_master = RunCli("launch --nnodes=2 --nproc=1 '" + plan + "'", ".",
                          "ACTORFLOW_JOB_TOKEN=x ");
  CHECK(no_master.exit_code == 2);
  CHECK(Contains(no_master.last_line, "needs --master-addr"));
}

TEST_CASE("launches on two nodes restart their job together", "[net]") {
  const std::string path = WritePlan(FailingPlan(), "failing_nodes.pbtxt");
  const std::string port = std::to_string(PortForJob());
  std::vector<HandRank> nodes;
  for (int node = 0; node < 2; ++node) {
    nodes.push_back(StartActorflow(
        {"launch", "--nnodes=2", "--node-rank=" + std::to_string(node),
         "--nproc-per-node=1", "--master-addr=127.0.0.1",
         "--master-port=" + port, "--max-restarts=1",
         "--restart-backoff-scale=0.1", path},
        "restart_node" + std::to_string(node),
        {{"ACTORFLOW_JOB_TOKEN", "restart-token"}}));
  }
  // A failure reaches every rank, so both launches restart on the same
  // backoff, and their ranks join the second job together.
  for (int node = 0; node < 2; ++node) {
    Finished finished = WaitRank(nodes[node]);
    INFO("node " << node << ": " << finished.out);
    CHECK(finished.exit_code == 1);
    CHECK(Contains(finished.out, "\"restarts\":1"));
    CHECK(Contains(finished.out,
                   "the job failed 2 times (1 restarts), each time:"));
    CHECK(Contains(finished.out, "piece 7"));
  }
}

TEST_CASE("bad job settings get clear errors", "[net]") {
  const std::string plan =
      testing::Runfile("examples/plans/three_machines.pbtxt");
  SECTION("a plan over three machines, run alone") {
    auto r = RunCli("run '" + plan + "'");
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "machine_id: must be 0 in one process"));
  }
  SECTION("too few ranks for the plan's machines") {
    auto r = RunCli("launch --nproc=2 '" + plan + "'");
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.last_line, "outside the job's machines 0..1"));
  }
  SECTION("an unreachable master") {
    auto r = RunCli("run '" + plan + "' --join-timeout=1", ".",
                    "MASTER_ADDR=127.0.0.1 MASTER_PORT=9 WORLD_SIZE=3 RANK=1 ");
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.last_line, "cannot reach rank 0 at 127.0.0.1:9"));
  }
  SECTION("a master port already taken") {
    // This test holds a listening socket on the port.
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(sa);
    REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
    REQUIRE(listen(fd, 1) == 0);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0);
    const std::string port = std::to_string(ntohs(sa.sin_port));
    auto r = RunCli(
        "run '" + plan + "' --join-timeout=1", ".",
        "MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port + " WORLD_SIZE=3 RANK=0 ");
    close(fd);
    CHECK(r.exit_code == 1);
    CHECK(Contains(r.last_line, "cannot listen on 127.0.0.1:" + port));
  }
  SECTION("--net-shm takes 0 or 1, checked before any rank starts") {
    auto r = RunCli("launch --nproc=3 '" + plan + "' --net-shm=yes");
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "--net-shm needs 0 or 1"));
  }
  SECTION("bad values name the variable") {
    auto r = RunCli("run '" + plan + "'", ".", "WORLD_SIZE=3 RANK=x ");
    CHECK(r.exit_code == 2);
    CHECK(Contains(r.err, "RANK: needs a whole number"));
  }
}

}  // namespace
}  // namespace actorflow::internal
