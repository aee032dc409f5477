// The engine's profiler: the records of known graphs (a diamond, a chain,
// readers beside a writer) on every engine type, each wait attributed to
// the variable that held the operation back; on and off, per push and from
// the environment; the Chrome trace and the table.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "actorflow/cuda_api.h"
#include "engine/engine.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/held_op.h"
#include "tests/test_util.h"

namespace actorflow::engine {
namespace testing = ::actorflow::internal::testing;
namespace {

using testing::HeldOp;

// The engine's Chrome trace, written by DumpProfile to `file` and read back.
google::protobuf::Struct DumpedTrace(const Engine& engine,
                                     const std::string& file) {
  const std::string path = testing::TestTempDir("profile") + "/" + file;
  REQUIRE(engine.DumpProfile(path).ok());
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  google::protobuf::Struct trace;
  REQUIRE(google::protobuf::util::JsonStringToMessage(text.str(), &trace).ok());
  return trace;
}

constexpr EngineType kAll[] = {EngineType::kNaive, EngineType::kThreadedPooled,
                               EngineType::kThreadedPerDevice};

std::unique_ptr<Engine> Profiled(EngineType type) {
  EngineOptions options;
  options.profiling = true;
  return Engine::Create(type, options);
}

std::map<std::string, OprRecord> ByName(const std::vector<OprRecord>& records) {
  std::map<std::string, OprRecord> by_name;
  for (const OprRecord& r : records) by_name[r.name] = r;
  return by_name;
}

const OprRecord::Dependency& Dep(const OprRecord& r, VarHandle var) {
  for (const OprRecord::Dependency& dep : r.deps) {
    if (dep.var == var->id()) return dep;
  }
  FAIL("operation '" << r.name << "' has no dependency on var " << var->id());
  return r.deps.front();
}

// Times in the order the engine allows: queued <= ready <= started <=
// finished, every grant between queued and ready.
void CheckTimes(const OprRecord& r) {
  INFO(r.name);
  CHECK(r.queued_ns <= r.ready_ns);
  CHECK(r.ready_ns <= r.started_ns);
  CHECK(r.started_ns <= r.finished_ns);
  for (const OprRecord::Dependency& dep : r.deps) {
    CHECK(dep.granted_ns >= r.queued_ns);
    CHECK(dep.granted_ns <= r.ready_ns);
    CHECK(dep.wait_ns == dep.granted_ns - r.queued_ns);
  }
}

// `after` ran to completion before `r` could start, and released `var`
// to it.
void CheckGrantedBy(const OprRecord& r, VarHandle var, const OprRecord& by) {
  INFO(r.name << " after " << by.name);
  const OprRecord::Dependency& dep = Dep(r, var);
  CHECK(dep.after == static_cast<int64_t>(by.seq));
  CHECK(dep.granted_ns >= by.finished_ns);
  CHECK(r.started_ns >= by.finished_ns);
}

TEST_CASE("a diamond's records: four operations, each wait on its variable") {
  for (EngineType type : kAll) {
    INFO(EngineTypeName(type));
    auto engine = Profiled(type);
    VarHandle a = engine->NewVariable("a");
    VarHandle b = engine->NewVariable("b");
    VarHandle c = engine->NewVariable();
    VarHandle d = engine->NewVariable("d");
    std::atomic<int> x{0};
    auto work = [&](RunContext) {
      for (int i = 0; i < 20000; ++i) x.fetch_add(1, std::memory_order_relaxed);
    };
    // src waits until the other three are pushed, so that they queue behind
    // it however slowly the pushing thread runs (NaiveEngine runs it inside
    // its push: nothing to wait for there).
    std::atomic<bool> pushed{type == EngineType::kNaive};
    bool src_waited = true;
    engine->PushSync(
        [&](RunContext rctx) {
          src_waited = testing::WaitUntil([&] { return pushed.load(); });
          work(rctx);
        },
        Context::CPU(), {}, {a}, FnProperty::kNormal, 0, "src");
    engine->PushSync(work, Context::CPU(), {a}, {b}, FnProperty::kNormal, 0,
                     "left");
    engine->PushSync(work, Context::CPU(), {a}, {c}, FnProperty::kNormal, 0,
                     "right");
    engine->PushSync(work, Context::CPU(), {b, c}, {d}, FnProperty::kNormal, 0,
                     "join");
    pushed = true;
    REQUIRE(engine->WaitForAll().ok());
    REQUIRE(src_waited);
    const auto records = engine->ProfileRecords();
    REQUIRE(records.size() == 4);  // WaitForAll adds none
    auto r = ByName(records);
    for (const auto& [name, record] : r) CheckTimes(record);
    CHECK(r["src"].deps.size() == 1);
    CHECK(Dep(r["src"], a).write);
    CHECK(Dep(r["src"], a).after == -1);
    CHECK_FALSE(Dep(r["left"], a).write);
    CHECK(Dep(r["left"], a).var_name == "a");
    CHECK(Dep(r["join"], c).var_name.empty());
    if (type != EngineType::kNaive) {
      // Pushed while src waited: held back by a until src completed.
      CheckGrantedBy(r["left"], a, r["src"]);
      CheckGrantedBy(r["right"], a, r["src"]);
    }
    CHECK(r["join"].started_ns >= r["left"].finished_ns);
    CHECK(r["join"].started_ns >= r["right"].finished_ns);
    CHECK(r["join"].status.ok());
  }
}

TEST_CASE("the wait goes to the variable released last") {
  for (EngineType type :
       {EngineType::kThreadedPooled, EngineType::kThreadedPerDevice}) {
    INFO(EngineTypeName(type));
    EngineOptions options;
    options.cpu_worker_nthreads = 2;
    options.pool_nthreads = 2;
    options.profiling = true;
    auto engine = Engine::Create(type, options);
    VarHandle b = engine->NewVariable("b");
    VarHandle c = engine->NewVariable("c");
    VarHandle d = engine->NewVariable("d");
    HeldOp left, right;
    engine->PushAsync(left.Fn(), Context::CPU(), {}, {b}, FnProperty::kNormal,
                      0, "left");
    engine->PushAsync(right.Fn(), Context::CPU(), {}, {c}, FnProperty::kNormal,
                      0, "right");
    engine->PushSync([](RunContext) {}, Context::CPU(), {b, c}, {d},
                     FnProperty::kNormal, 0, "join");
    left.Release();
    // join still waits for c: no record of it yet, b already granted.
    REQUIRE(testing::WaitUntil(
        [&] { return engine->ProfileRecords().size() == 1; }));
    right.Release();
    REQUIRE(engine->WaitForAll().ok());
    auto r = ByName(engine->ProfileRecords());
    REQUIRE(r.size() == 3);
    CheckGrantedBy(r["join"], b, r["left"]);
    CheckGrantedBy(r["join"], c, r["right"]);
    CHECK(Dep(r["join"], c).wait_ns >= Dep(r["join"], b).wait_ns);
    CHECK(r["join"].ready_ns >= Dep(r["join"], c).granted_ns);
    CheckTimes(r["join"]);
  }
}

TEST_CASE("a chain of writes and readers beside a writer") {
  for (EngineType type : kAll) {
    INFO(EngineTypeName(type));
    auto engine = Profiled(type);
    VarHandle v = engine->NewVariable("v");
    for (int i = 0; i < 5; ++i) {
      engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v},
                       FnProperty::kNormal, 0, "chain" + std::to_string(i));
    }
    engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v},
                     FnProperty::kNormal, 0, "writer");
    for (int i = 0; i < 3; ++i) {
      engine->PushSync([](RunContext) {}, Context::CPU(), {v}, {},
                       FnProperty::kNormal, 0, "reader" + std::to_string(i));
    }
    engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v},
                     FnProperty::kNormal, 0, "rewriter");
    REQUIRE(engine->WaitForAll().ok());
    const auto records = engine->ProfileRecords();
    REQUIRE(records.size() == 10);
    auto r = ByName(records);
    for (const OprRecord& record : records) CheckTimes(record);
    // In push order, and each write after the one before it.
    for (size_t i = 1; i < records.size(); ++i) {
      CHECK(records[i].seq > records[i - 1].seq);
    }
    for (int i = 1; i < 5; ++i) {
      const OprRecord& now = r["chain" + std::to_string(i)];
      const OprRecord& before = r["chain" + std::to_string(i - 1)];
      CHECK(now.started_ns >= before.finished_ns);
      if (type != EngineType::kNaive && Dep(now, v).after >= 0) {
        CheckGrantedBy(now, v, before);
      }
    }
    const OprRecord& rewriter = r["rewriter"];
    std::vector<uint64_t> readers;
    for (int i = 0; i < 3; ++i) {
      const OprRecord& reader = r["reader" + std::to_string(i)];
      CHECK(reader.started_ns >= r["writer"].finished_ns);
      CHECK(rewriter.started_ns >= reader.finished_ns);
      readers.push_back(reader.seq);
    }
    // The last reader to complete let the rewriter run.
    const int64_t after = Dep(rewriter, v).after;
    if (after >= 0) {
      CHECK(std::count(readers.begin(), readers.end(),
                       static_cast<uint64_t>(after)) == 1);
    }
  }
}

TEST_CASE("off records nothing; per push and the environment turn it on") {
  auto engine = Engine::Create(EngineType::kThreadedPerDevice, EngineOptions());
  CHECK_FALSE(engine->profiling());
  VarHandle v = engine->NewVariable();
  engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v},
                   FnProperty::kNormal, 0, "quiet");
  engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v},
                   FnProperty::kNormal, 0, "asked", /*profiling=*/true);
  REQUIRE(engine->WaitForAll().ok());
  auto records = engine->ProfileRecords();
  REQUIRE(records.size() == 1);
  CHECK(records[0].name == "asked");
  engine->SetProfiling(true);
  engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v});
  engine->SetProfiling(false);
  engine->PushSync([](RunContext) {}, Context::CPU(), {}, {v});
  REQUIRE(engine->WaitForAll().ok());
  records = engine->ProfileRecords();
  REQUIRE(records.size() == 2);
  CHECK(records[1].name == "(unnamed)");
  engine->ClearProfile();
  CHECK(engine->ProfileRecords().empty());

  setenv("ACTORFLOW_PROFILER_AUTOSTART", "1", 1);
  auto from_env = EngineOptions::FromEnv();
  REQUIRE(from_env.ok());
  CHECK(from_env->profiling);
  setenv("ACTORFLOW_PROFILER_AUTOSTART", "yes please", 1);
  from_env = EngineOptions::FromEnv();
  REQUIRE_FALSE(from_env.ok());
  CHECK(from_env.status().message() ==
        "$ACTORFLOW_PROFILER_AUTOSTART: 1 or 0 (true or false), got 'yes "
        "please'");
  unsetenv("ACTORFLOW_PROFILER_AUTOSTART");
}

TEST_CASE("failed and skipped operations are recorded with their error") {
  auto engine = Profiled(EngineType::kThreadedPerDevice);
  VarHandle v = engine->NewVariable();
  engine->PushSync([](RunContext) { throw std::runtime_error("boom"); },
                   Context::CPU(), {}, {v}, FnProperty::kNormal, 0, "fails");
  engine->PushSync([](RunContext) {}, Context::CPU(), {v}, {},
                   FnProperty::kNormal, 0, "skipped");
  CHECK_FALSE(engine->WaitForAll().ok());
  auto r = ByName(engine->ProfileRecords());
  REQUIRE(r.size() == 2);
  CHECK(r["fails"].started_ns > 0);
  CHECK(r["fails"].status.message() == "operation 'fails' threw: boom");
  CHECK(r["skipped"].started_ns == 0);  // never ran
  CHECK(r["skipped"].status.message() == "operation 'fails' threw: boom");
}

TEST_CASE("workers by name, the Chrome trace and the table") {
  EngineOptions options;
  options.profiling = true;
  options.cpu_worker_nthreads = 2;
  auto engine = Engine::Create(EngineType::kThreadedPerDevice, options);
  VarHandle a = engine->NewVariable("a");
  VarHandle b = engine->NewVariable("b");
  const bool gpu = cuda::DeviceAvailable(0).ok();
  for (int i = 0; i < 4; ++i) {
    engine->PushSync([](RunContext) {}, Context::CPU(), {}, {a},
                     FnProperty::kNormal, 0, "write_a");
    engine->PushSync([](RunContext) {}, gpu ? Context::GPU(0) : Context::CPU(),
                     {a}, {b}, FnProperty::kNormal, 0, "a_to_b");
    engine->PushSync([](RunContext) {}, Context::CPU(), {b}, {},
                     FnProperty::kCPUPrioritized, 0, "read_b");
    engine->PushSync([](RunContext) {}, Context::CPU(), {b}, {},
                     FnProperty::kAsync, 0, "async_read_b");
  }
  REQUIRE(engine->WaitForAll().ok());
  const auto records = engine->ProfileRecords();
  REQUIRE(records.size() == 16);
  std::map<std::string, std::string> worker_of;
  int arrows = 0;
  for (const OprRecord& r : records) {
    INFO(r.name << " on " << r.worker);
    if (r.name == "write_a")
      CHECK(absl::StartsWith(r.worker, "cpu(0) worker "));
    if (r.name == "a_to_b") {
      CHECK(absl::StartsWith(r.worker,
                             gpu ? "gpu(0) compute " : "cpu(0) worker "));
      CHECK(r.ctx.is_gpu() == gpu);
    }
    if (r.name == "read_b") CHECK(absl::StartsWith(r.worker, "cpu priority "));
    // kAsync: on the thread that made it ready: the pusher's ("inline";
    // also when b was released while the push was still being queued), or
    // the worker whose completion released b (a GPU worker when a_to_b ran
    // on the GPU).
    if (r.name == "async_read_b") {
      const int64_t after = r.deps.at(0).after;
      std::string releaser = "inline";
      for (const OprRecord& other : records) {
        if (after >= 0 && other.seq == static_cast<uint64_t>(after)) {
          releaser = other.worker;
        }
      }
      CHECK((r.worker == releaser || r.worker == "inline"));
    }
    for (const OprRecord::Dependency& dep : r.deps) arrows += dep.after >= 0;
  }

  const google::protobuf::Struct trace = DumpedTrace(*engine, "trace.json");
  const auto& events = trace.fields().at("traceEvents").list_value().values();
  int slices = 0, starts = 0, ends = 0, rows = 0;
  for (const auto& event : events) {
    const auto& fields = event.struct_value().fields();
    const std::string ph = fields.at("ph").string_value();
    // On a GPU, a_to_b also has a slice in its worker's device row.
    if (ph == "X" && fields.at("cat").string_value() == "device") continue;
    slices += ph == "X";
    starts += ph == "s";
    ends += ph == "f";
    rows += ph == "M" && fields.at("name").string_value() == "thread_name";
    if (ph == "X" && fields.at("name").string_value() == "a_to_b") {
      const auto& args = fields.at("args").struct_value().fields();
      CHECK(args.at("reads").list_value().values(0).string_value() == "a");
      CHECK(args.at("writes").list_value().values(0).string_value() == "b");
      CHECK(args.at("wait_us").struct_value().fields().count("a") == 1);
    }
  }
  CHECK(slices == 16);
  CHECK(starts == arrows);
  CHECK(ends == arrows);
  CHECK(arrows > 0);
  CHECK(rows >= 2);  // a CPU worker, the priority pool

  const std::string table = engine->ProfileTable();
  INFO(table);
  CHECK(absl::StrContains(table, "name"));
  for (const char* name : {"write_a", "a_to_b", "read_b", "async_read_b"}) {
    CHECK(absl::StrContains(table, name));
  }
  CHECK(engine->DumpProfile("/nonexistent-dir/trace.json").message() ==
        "DumpProfile: cannot write '/nonexistent-dir/trace.json'");
}

TEST_CASE("GPU operations carry their device time") {
  if (!cuda::DeviceAvailable(0).ok()) {
    // The CPU-only configuration has no device to time; the emulated one
    // (CI) and a GPU machine run this case.
    SUCCEED("no CUDA device: " << cuda::DeviceAvailable(0).message());
    return;
  }
  EngineOptions options;
  options.profiling = true;
  auto engine = Engine::Create(EngineType::kThreadedPerDevice, options);
  VarHandle v = engine->NewVariable("v");
  // 32 MiB copied device to device on the worker's stream: device work of a
  // known size whose end the function does not wait for itself.
  constexpr size_t kBytes = size_t{32} << 20;
  absl::StatusOr<void*> src_or = cuda::DeviceMalloc(0, kBytes);
  absl::StatusOr<void*> dst_or = cuda::DeviceMalloc(0, kBytes);
  REQUIRE(src_or.ok());
  REQUIRE(dst_or.ok());
  void* src = *src_or;
  void* dst = *dst_or;
  REQUIRE(cuda::DeviceMemset(0, src, 7, kBytes).ok());
  for (int i = 0; i < 3; ++i) {
    engine->PushSync(
        [=](RunContext rctx) {
          // Thrown, an error fails the operation (and WaitForAll below).
          absl::Status status =
              cuda::MemcpyAsync(dst, src, kBytes, rctx.stream);
          if (!status.ok()) throw std::runtime_error(status.ToString());
        },
        Context::GPU(0), {}, {v}, FnProperty::kNormal, 0, "copy");
    engine->PushAsync(
        [=](RunContext rctx, CallbackOnComplete done) {
          absl::Status status =
              cuda::MemcpyAsync(src, dst, kBytes, rctx.stream);
          done(status.ok() ? cuda::StreamSynchronize(0, rctx.stream) : status);
        },
        Context::GPU(0), {}, {v}, FnProperty::kNormal, 0, "copy_back");
    engine->PushSync([](RunContext) {}, Context::CPU(), {v}, {},
                     FnProperty::kNormal, 0, "on_cpu");
  }
  REQUIRE(engine->WaitForAll().ok());
  const auto records = engine->ProfileRecords();
  REQUIRE(records.size() == 9);
  for (const OprRecord& r : records) {
    INFO(r.name << " on " << r.worker << ": device " << r.device_ns
                << " ns, host " << r.finished_ns - r.started_ns << " ns");
    if (r.name == "on_cpu") {
      CHECK(r.device_ns == -1);
      continue;
    }
    // The copy ran on the device between the events.
    CHECK(r.device_ns > 0);
    // PushSync marks the end before it waits for the stream, so the events
    // lie inside the host's span of the operation (function called to
    // completion), give or take the two clocks' resolution. copy_back's end
    // is marked at its completion, when the device may take a while to
    // reach it: no bound.
    if (r.name == "copy") {
      CHECK(r.device_ns <= r.finished_ns - r.started_ns + 5'000);
    }
  }
  const google::protobuf::Struct trace = DumpedTrace(*engine, "device.json");
  std::set<std::string> device_rows;
  int device_slices = 0;
  for (const auto& event :
       trace.fields().at("traceEvents").list_value().values()) {
    const auto& fields = event.struct_value().fields();
    const std::string ph = fields.at("ph").string_value();
    if (ph == "M" && fields.at("name").string_value() == "thread_name") {
      const std::string row =
          fields.at("args").struct_value().fields().at("name").string_value();
      if (absl::EndsWith(row, " device")) device_rows.insert(row);
    }
    if (ph == "X" && fields.at("cat").string_value() == "device") {
      ++device_slices;
    }
    if (ph == "X" && fields.at("name").string_value() == "copy" &&
        fields.at("cat").string_value() != "device") {
      CHECK(fields.at("args")
                .struct_value()
                .fields()
                .at("device_us")
                .number_value() > 0);
    }
  }
  CHECK(device_slices == 6);
  REQUIRE(!device_rows.empty());
  for (const std::string& row : device_rows) {
    CHECK(absl::StartsWith(row, "gpu(0) compute "));
  }
  const std::string table = engine->ProfileTable();
  INFO(table);
  CHECK(absl::StrContains(table, "device_us"));
  for (absl::string_view line : absl::StrSplit(table, '\n')) {
    if (absl::StartsWith(line, "on_cpu ")) CHECK(absl::EndsWith(line, " -"));
    if (absl::StartsWith(line, "copy ")) CHECK(!absl::EndsWith(line, " -"));
  }
  cuda::DeviceFree(0, src);
  cuda::DeviceFree(0, dst);
}

}  // namespace
}  // namespace actorflow::engine
