// Partial sums held on several machines (Job.partial_sum_reduction): what
// each machine receives for them, which way the compiler picks, and that
// the scattered reduction adds the very bits the gather does, run by real
// ranks (one net::Job per machine, each on a thread of this process).
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "net/job.h"
#include "net/launch.h"
#include "tests/job_test_kernels.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

const TaskProto* FindTask(const Plan& plan, const std::string& name) {
  for (const TaskProto& task : plan.task()) {
    if (task.name() == name) return &task;
  }
  return nullptr;
}

const TaskProto& TaskById(const Plan& plan, int64_t id) {
  return plan.task(static_cast<int>(id - 1));
}

// The task that makes register `id`.
const TaskProto& Producer(const Plan& plan, int64_t id) {
  for (const TaskProto& task : plan.task()) {
    for (const auto& [key, reg] : task.produced_regst_desc()) {
      if (reg.regst_desc_id() == id) return task;
    }
  }
  FAIL("no task makes regst_desc " << id);
  return plan.task(0);
}

int64_t RegisterBytes(const RegisterDescProto& reg) {
  int64_t bytes = 0;
  for (const BlobDescProto& blob : reg.blob()) {
    int64_t elements = 1;
    for (int64_t d : blob.shape()) elements *= d;
    bytes += elements * 4;  // float32 throughout these jobs
  }
  REQUIRE(bytes > 0);
  return bytes;
}

// Per machine, the bytes of one piece that reach it from other machines
// (`incoming`) or that it sends to them: each register counted once per
// other machine that reads it.
std::map<int, int64_t> BytesCrossing(const Plan& plan, bool incoming) {
  std::map<int, int64_t> bytes;
  for (const TaskProto& task : plan.task()) {
    const int from = task.stream().machine_id();
    for (const auto& [key, reg] : task.produced_regst_desc()) {
      std::set<int> readers;
      for (int64_t consumer : reg.consumer_task_id()) {
        const int to = TaskById(plan, consumer).stream().machine_id();
        if (to != from) readers.insert(to);
      }
      for (int to : readers) bytes[incoming ? to : from] += RegisterBytes(reg);
    }
  }
  return bytes;
}

std::map<int, int64_t> BytesIn(const Plan& plan) {
  return BytesCrossing(plan, true);
}

std::map<int, int64_t> BytesOut(const Plan& plan) {
  return BytesCrossing(plan, false);
}

int64_t Largest(const std::map<int, int64_t>& bytes) {
  int64_t largest = 0;
  for (const auto& [machine, b] : bytes) largest = std::max(largest, b);
  return largest;
}

// `grad`: partial sums of `shape` on `devices` CPU devices of each of
// `machines`; `reader` reads the whole on machine `reader_machine` (-1: on
// every machine, as each rank's optimizer reads a gradient's sum).
Job PartialSumJob(int machines, int devices, std::vector<int64_t> shape,
                  Job::PartialSumReduction how,
                  const std::string& part_kernel = "source",
                  const std::string& reader = "checksum",
                  int reader_machine = 0) {
  JobBuilder job(6);
  std::vector<int32_t> machine_ids, device_ids;
  for (int m = 0; m < machines; ++m) machine_ids.push_back(m);
  for (int d = 0; d < devices; ++d) device_ids.push_back(d);
  BlobDescProto blob;
  blob.set_name("data");
  blob.set_data_type(DataTypes::DT_FLOAT32);
  for (int64_t d : shape) blob.add_shape(d);
  job.Op("grad", part_kernel)
      .Blob(blob)
      .Place(DeviceKind::kCpu, device_ids, machine_ids)
      .OutputSignature("out", PartialSumSignature());
  auto read = job.Op("read", reader).Input("grad");
  if (reader_machine < 0) {
    read.InputBroadcast().Place(DeviceKind::kCpu, {0}, machine_ids);
  } else {
    read.Place(DeviceKind::kCpu, {0}, {reader_machine});
  }
  job.job().set_partial_sum_reduction(how);
  return job.job();
}

// The plan of `job`, which must compile (any device counts as present).
Plan MustCompile(const Job& job, const KernelBindings* bindings = nullptr) {
  return testing::MustCompile(job, bindings).plan;
}

TEST_CASE("scattered partial sums: each machine receives one register") {
  // 1680 rows: whole slices for 3 and for 7 reducing machines.
  const int64_t whole = 1680 * 4 * 4;
  for (int machines : {4, 8}) {
    INFO(machines << " machines");
    const Plan scattered = MustCompile(
        PartialSumJob(machines, 1, {1680, 4}, Job::PARTIAL_SUM_AUTO));
    const Plan gathered = MustCompile(
        PartialSumJob(machines, 1, {1680, 4}, Job::PARTIAL_SUM_GATHER));
    CHECK(Largest(BytesIn(scattered)) == whole);
    CHECK(BytesIn(gathered).at(0) == (machines - 1) * whole);
    // Reducer r is machine r + 1 (the reader's holds part 0): it adds
    // slice r of every part, in part order.
    const int reducers = machines - 1;
    for (int r = 0; r < reducers; ++r) {
      const std::string name =
          absl::StrCat("grad.out:add", r, "of", reducers, "@m", r + 1, ".cpu0");
      const TaskProto* add = FindTask(scattered, name);
      REQUIRE(add != nullptr);
      CHECK(add->stream().machine_id() == r + 1);
      const auto& in = add->consumed_regst_desc_id().at("in").regst_desc_id();
      REQUIRE(in.size() == machines);
      for (int k = 0; k < machines; ++k) {
        CHECK(Producer(scattered, in[k]).name() ==
              absl::StrCat("grad/", k, ":slice(0)", r, "of", reducers, "@",
                           k == 0 ? "" : absl::StrCat("m", k, "."), "cpu0"));
      }
    }
    const TaskProto* concat = FindTask(scattered, "grad.out:concat@cpu0");
    REQUIRE(concat != nullptr);
    CHECK(concat->consumed_regst_desc_id().at("in").regst_desc_id_size() ==
          reducers);
    CHECK(FindTask(gathered, "grad.out:add@cpu0") != nullptr);
    // Read on every machine: each reducer sends its sum to the others,
    // rather than machine 0 sending the whole to each of them.
    const Plan everywhere =
        MustCompile(PartialSumJob(machines, 1, {1680, 4}, Job::PARTIAL_SUM_AUTO,
                                  "source", "checksum", -1));
    const int64_t slices = whole / reducers * (machines - 2);  // to peers
    CHECK(BytesOut(everywhere).at(0) == whole);  // its part's slices
    CHECK(Largest(BytesOut(everywhere)) ==
          slices + whole / reducers * (machines - 1));
    CHECK(Largest(BytesIn(everywhere)) ==
          whole + whole / reducers * (reducers - 1));
  }
}

TEST_CASE("the compiler gathers where scattering would not pay") {
  SECTION("two machines: the reader's link takes one register either way") {
    const Plan plan =
        MustCompile(PartialSumJob(2, 1, {64, 2}, Job::PARTIAL_SUM_AUTO));
    CHECK(FindTask(plan, "grad.out:add@cpu0") != nullptr);
    CHECK(FindTask(plan, "grad.out:concat@cpu0") == nullptr);
  }
  SECTION("asked for, two machines scatter over the one reducer") {
    const Plan plan =
        MustCompile(PartialSumJob(2, 1, {64, 2}, Job::PARTIAL_SUM_SCATTER));
    CHECK(FindTask(plan, "grad.out:add0of1@m1.cpu0") != nullptr);
    CHECK(FindTask(plan, "grad.out:add@cpu0") == nullptr);
  }
  SECTION("one machine: nothing crosses, one add, whatever is asked") {
    const Plan plan =
        MustCompile(PartialSumJob(1, 3, {64, 2}, Job::PARTIAL_SUM_SCATTER));
    CHECK(FindTask(plan, "grad.out:add@cpu0") != nullptr);
  }
  SECTION("a first axis shorter than the reducers: gathered") {
    const Plan plan =
        MustCompile(PartialSumJob(4, 1, {2, 64}, Job::PARTIAL_SUM_AUTO));
    CHECK(FindTask(plan, "grad.out:add@cpu0") != nullptr);
  }
  SECTION("the reader on a machine of its own: every part's machine adds") {
    JobBuilder job(1);
    job.Op("grad", "source")
        .Shape({30})
        .Place(DeviceKind::kCpu, {0}, {1, 2})
        .OutputSignature("out", PartialSumSignature());
    job.Op("read", "checksum").Input("grad");
    const Plan plan = MustCompile(job.job());
    CHECK(FindTask(plan, "grad.out:add0of2@m1.cpu0") != nullptr);
    CHECK(FindTask(plan, "grad.out:add1of2@m2.cpu0") != nullptr);
    CHECK(Largest(BytesIn(plan)) == 30 * 4);
  }
}

TEST_CASE("a reduction that cannot be had is an error naming why") {
  SECTION("scattering a blob with no axis") {
    CHECK(testing::CompileError(
              PartialSumJob(4, 1, {}, Job::PARTIAL_SUM_SCATTER)) ==
          "op 'read' input 0 ('grad'): partial_sum_reduction "
          "PARTIAL_SUM_SCATTER, but blob 'data' is data: float32 [], not "
          "static with a first axis of at least 3 (the machines that add)");
    // Left to the compiler, the same job gathers.
    MustCompile(PartialSumJob(4, 1, {}, Job::PARTIAL_SUM_AUTO));
  }
  SECTION("a value the enum does not have") {
    Job job = PartialSumJob(2, 1, {4}, Job::PARTIAL_SUM_AUTO);
    job.set_partial_sum_reduction(static_cast<Job::PartialSumReduction>(7));
    CHECK(testing::CompileError(job) ==
          "job: partial_sum_reduction 7 is none of PARTIAL_SUM_AUTO (0), "
          "PARTIAL_SUM_GATHER (1), PARTIAL_SUM_SCATTER (2)");
  }
}

// ------------------------------------------------------------ the bits

// Part k's values for `piece`: magnitudes from 2^-20 to 2^20, so that
// adding them in another order changes the float result.
std::vector<float> PartValues(uint64_t seed, int part, int64_t piece,
                              int64_t elements) {
  std::mt19937_64 rng(seed ^ (uint64_t(part) << 40) ^ uint64_t(piece) << 8);
  std::uniform_real_distribution<float> mantissa(-1.f, 1.f);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<float> values(elements);
  for (float& v : values) v = std::ldexp(mantissa(rng), exponent(rng));
  return values;
}

// What each reader task received, by piece.
struct Captured {
  std::mutex mu;
  std::map<std::string, std::map<int64_t, std::vector<float>>> pieces;
};

SessionOptions Kernels(uint64_t seed, Captured* captured) {
  SessionOptions options;
  auto no_init = [](const KernelInitContext&) { return absl::OkStatus(); };
  // psr_part: part k of the data-parallel op "grad/k".
  options.kernels.BindFunction(
      "psr_part",
      [seed](KernelContext* ctx) {
        const std::string& name = ctx->task_name();
        int part = 0;
        if (!absl::SimpleAtoi(name.substr(name.rfind('/') + 1), &part)) {
          return absl::InternalError(absl::StrCat("not a part: ", name));
        }
        absl::Span<float> out =
            ctx->output(0).blob(0).mutable_data<float>().value();
        const std::vector<float> values =
            PartValues(seed, part, ctx->piece_id(), out.size());
        std::memcpy(out.data(), values.data(), out.size() * sizeof(float));
        return absl::OkStatus();
      },
      no_init);
  options.kernels.BindFunction(
      "psr_capture",
      [captured](KernelContext* ctx) {
        absl::Span<const float> in =
            ctx->input(0).blob(0).data<float>().value();
        std::lock_guard<std::mutex> lock(captured->mu);
        captured->pieces[ctx->task_name()][ctx->piece_id()].assign(in.begin(),
                                                                   in.end());
        return absl::OkStatus();
      },
      no_init);
  return options;
}

// Every rank of `plan` on a thread of its own; the first error, if any.
absl::Status RunRanks(const Plan& plan, int world, int64_t pieces,
                      const SessionOptions& options) {
  const int port = net::FreePort("127.0.0.1");
  std::vector<absl::Status> status(world);
  std::vector<std::thread> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      net::JobConfig config;
      config.rank = r;
      config.world_size = world;
      config.master_port = port;
      config.join_timeout = absl::Seconds(60);
      config.peer_timeout = absl::Seconds(60);
      auto job = net::Job::Create(plan, pieces, config, options);
      status[r] = job.status();
      if (status[r].ok()) status[r] = (*job)->Run(pieces).status();
      if (status[r].ok()) status[r] = (*job)->Finish();
    });
  }
  for (std::thread& rank : ranks) rank.join();
  for (int r = 0; r < world; ++r) {
    if (!status[r].ok()) {
      return absl::Status(status[r].code(),
                          absl::StrCat("rank ", r, ": ", status[r].message()));
    }
  }
  return absl::OkStatus();
}

TEST_CASE("scattered and gathered partial sums are the same bits", "[net]") {
  const uint64_t seed = testing::TestSeed("partial_sum_bits");
  constexpr int kDevices = 2;
  constexpr int64_t kPieces = 6, kRows = 37, kCols = 3;  // 37: uneven slices
  // Over `machines`, the reader on `reader_machine` (-1: on each): every
  // reader gets the sum in part order.
  auto check = [&](int machines, int reader_machine,
                   Job::PartialSumReduction how) {
    const int parts = machines * kDevices;
    INFO(machines << " machines, reader on machine " << reader_machine << ", "
                  << Job::PartialSumReduction_Name(how));
    // The sum in part order, and proof that order matters for these values.
    std::map<int64_t, std::vector<float>> expected;
    bool order_matters = false;
    for (int64_t p = 0; p < kPieces; ++p) {
      std::vector<float> sum = PartValues(seed, 0, p, kRows * kCols);
      std::vector<float> reversed =
          PartValues(seed, parts - 1, p, kRows * kCols);
      for (int k = 1; k < parts; ++k) {
        const std::vector<float> part = PartValues(seed, k, p, kRows * kCols);
        const std::vector<float> back =
            PartValues(seed, parts - 1 - k, p, kRows * kCols);
        for (size_t i = 0; i < sum.size(); ++i) {
          sum[i] += part[i];
          reversed[i] += back[i];
        }
      }
      order_matters |= std::memcmp(sum.data(), reversed.data(),
                                   sum.size() * sizeof(float)) != 0;
      expected[p] = sum;
    }
    REQUIRE(order_matters);
    Captured captured;
    SessionOptions options = Kernels(seed, &captured);
    const Plan plan =
        MustCompile(PartialSumJob(machines, kDevices, {kRows, kCols}, how,
                                  "psr_part", "psr_capture", reader_machine),
                    &options.kernels);
    const std::string first_reader =
        reader_machine <= 0 ? std::string("cpu0")
                            : absl::StrCat("m", reader_machine, ".cpu0");
    CHECK((FindTask(plan, "grad.out:concat@" + first_reader) != nullptr) ==
          (how == Job::PARTIAL_SUM_SCATTER ||
           (how == Job::PARTIAL_SUM_AUTO && machines > 2)));
    // Where every machine reads the sum, each makes it itself (but under
    // GATHER): its own concat of the reducers' sums, or over two machines
    // its own add of the parts.
    int whole_makers = 0;
    for (const TaskProto& task : plan.task()) {
      whole_makers += absl::StartsWith(task.name(), "grad.out:concat@") ||
                      absl::StartsWith(task.name(), "grad.out:add@");
    }
    CHECK(
        whole_makers ==
        (reader_machine < 0 && how != Job::PARTIAL_SUM_GATHER ? machines : 1));
    const absl::Status run = RunRanks(plan, machines, kPieces, options);
    INFO(run.message());
    REQUIRE(run.ok());
    REQUIRE(captured.pieces.size() ==
            static_cast<size_t>(reader_machine < 0 ? machines : 1));
    for (const auto& [reader, pieces] : captured.pieces) {
      INFO("reader " << reader);
      REQUIRE(pieces.size() == kPieces);
      for (const auto& [piece, sum] : expected) {
        INFO("piece " << piece);
        const std::vector<float>& got = pieces.at(piece);
        REQUIRE(got.size() == sum.size());
        CHECK(std::memcmp(got.data(), sum.data(), sum.size() * sizeof(float)) ==
              0);
      }
    }
  };
  for (int reader_machine : {0, 2}) {
    for (auto how : {Job::PARTIAL_SUM_SCATTER, Job::PARTIAL_SUM_GATHER}) {
      check(4, reader_machine, how);
    }
  }
  // A reader on every machine: over four, each concatenates the reducers'
  // sums itself; over two, each adds both machines' parts itself.
  check(4, -1, Job::PARTIAL_SUM_AUTO);
  check(4, -1, Job::PARTIAL_SUM_GATHER);
  check(2, -1, Job::PARTIAL_SUM_AUTO);
}

}  // namespace
}  // namespace actorflow::internal
