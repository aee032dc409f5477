// Random jobs against their evaluation in sequence. Each trial draws a job
// and evaluates every op as the job means it, piece by piece, in plain C++;
// every op gets a weighted (position-sensitive) sink, and every sink of the
// compiled plan must equal the evaluation. What a trial draws:
// - float64, float32 or int32 data, from ramps and constant sources (these
//   data parallel, split either way);
// - scale, add (2-3 inputs, often one output read two or three times),
//   identity, and the positional head, slice and concat (their results
//   depend on which element is where);
// - placements over 1-4 CPU devices, with towers (replicas), signatures
//   stated (split either axis, broadcast) or inferred;
// - partial sums, read by other ops as sums or as partial sums on other
//   devices (as many of them);
// - cycles through an initial `variable` (a training window: one buffer,
//   shared memory blocks);
// - a memory budget so tight that every register gets one buffer.
// A second test partitions random jobs over 1-3 machines into valid ranks.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "net/plan_partition.h"
#include "plan/plan_builder.h"
#include "tests/job_test_kernels.h"
#include "tests/test_util.h"
#include "thread/balanced_splitter.h"

namespace actorflow::internal {
namespace {

using OpHandle = JobBuilder::OpHandle;
using testing::MustCompile;
using testing::RunPlan;
using testing::TestKernels;

// One piece of a logical tensor: rows x cols, row-major.
struct Piece {
  int64_t rows = 0;
  int64_t cols = 0;
  std::vector<double> data;
};

// An op's output as the job means it, one entry per act.
struct Value {
  std::string name;
  DataType type = DT_FLOAT64;
  int64_t max_rows = 0;  // the register's rows (a dynamic one's most)
  int64_t cols = 0;
  bool dynamic = false;          // rows vary by piece (after a head)
  bool partial = false;          // laid out as partial sums
  bool source = false;           // made by a source: small values
  int towers = 1;                // tasks of its op
  std::vector<int32_t> devices;  // its op's placement
  bool replicas = false;
  std::vector<Piece> pieces;
};

// Values of one type, shape and per-piece shape: add's inputs.
bool Alike(const Value& a, const Value& b) {
  if (a.type != b.type || a.max_rows != b.max_rows || a.cols != b.cols ||
      a.dynamic != b.dynamic) {
    return false;
  }
  const size_t n = std::min(a.pieces.size(), b.pieces.size());
  for (size_t p = 0; p < n; ++p) {
    if (a.pieces[p].rows != b.pieces[p].rows) return false;
  }
  return true;
}

// Concat's inputs along `axis`: alike but for that axis.
bool Joinable(const Value& a, const Value& b, int axis) {
  if (a.type != b.type || a.dynamic != b.dynamic) return false;
  if (axis == 0) return a.cols == b.cols;
  if (a.max_rows != b.max_rows) return false;
  const size_t n = std::min(a.pieces.size(), b.pieces.size());
  for (size_t p = 0; p < n; ++p) {
    if (a.pieces[p].rows != b.pieces[p].rows) return false;
  }
  return true;
}

// The element as the type holds it (float32 rounds; the drawn values of
// int32 jobs are whole numbers well inside its range).
double As(DataType type, double x) {
  return type == DT_FLOAT32 ? static_cast<double>(static_cast<float>(x)) : x;
}

double WeightedSum(const Value& value) {
  double sum = 0;
  for (const Piece& piece : value.pieces) {
    for (size_t i = 0; i < piece.data.size(); ++i) {
      sum += static_cast<double>(i + 1) * piece.data[i];
    }
  }
  return sum;
}

const char* TypeName(DataType type) {
  return type == DT_FLOAT32 ? "float32"
         : type == DT_INT32 ? "int32"
                            : "float64";
}

class RandomJob {
 public:
  RandomJob(std::mt19937_64* rng, int pieces)
      : rng_(*rng), pieces_(pieces), job_(pieces) {}

  int Pick(int n) { return static_cast<int>(rng_() % n); }

  // A random set of 1-4 CPU devices; `towers` (if not 0) of exactly that
  // many tasks, no replicas.
  void Place(OpHandle& op, Value* value, int towers = 0) {
    std::vector<int32_t> devices;
    if (towers > 0) {
      std::vector<int32_t> all = {0, 1, 2, 3};
      std::shuffle(all.begin(), all.end(), rng_);
      devices.assign(all.begin(), all.begin() + towers);
      std::sort(devices.begin(), devices.end());
    } else {
      for (int d = 0; d < 4; ++d) {
        if (Pick(2)) devices.push_back(d);
      }
      if (devices.empty()) devices.push_back(Pick(4));
    }
    op.Place(DeviceKind::kCpu, devices);
    value->devices = devices;
    value->towers = static_cast<int>(devices.size());
    value->replicas = towers == 0 && Pick(6) == 0;
    if (value->replicas) {
      op.Replicas(2);
      value->towers *= 2;
    }
  }

  void Source(DataType type, int64_t rows, int64_t cols) {
    Value v = NewValue(absl::StrCat("src", values_.size()), type, rows, cols);
    v.source = true;
    if (Pick(2)) {
      const double offset = Pick(50);
      job_.Op(v.name, "test_ramp")
          .Blob(BlobProto("data", type, {rows, cols}))
          .Attr("offset", offset);
      Fill(&v, pieces_,
           [&](int p, int64_t i) { return 100.0 * p + i + offset; });
    } else {
      // A constant source may run data parallel: its parts are alike.
      const double start = Pick(9);
      auto op = job_.Op(v.name, "source")
                    .Blob(BlobProto("data", type, {rows, cols}))
                    .Attr("value", start);
      Place(op, &v);
      op.OutputSignature("out",
                         Pick(2) ? SplitSignature(0) : SplitSignature(1));
      Fill(&v, pieces_, [&](int p, int64_t) { return start + p; });
    }
    values_.push_back(v);
  }

  // One operator reading earlier values; false if none fits.
  bool Operator(int kind) {
    const std::string name = absl::StrCat("op", values_.size());
    const Value& a = values_[Pick(static_cast<int>(values_.size()))];
    switch (kind) {
      case 0:
        return Unary(name, a, IsFloatingType(a.type) ? "scale" : "identity");
      case 1:
        return Add(name, a);
      case 2:
        return Unary(name, a, "identity");
      case 3:
        return Unary(name, a, "head");
      case 4:
        return Unary(name, a, "slice");
      case 5:
        return Concat(name, a);
      case 6:
        return Partial(name, a);
      default:
        return Cycle(name);
    }
  }

  // Every value gets a sink on one device; its expected checksum.
  std::map<std::string, std::pair<double, int>> Sinks() {
    std::map<std::string, std::pair<double, int>> expected;
    for (const Value& v : values_) {
      const std::string sink = "sink." + v.name;
      job_.Op(sink, "test_weighted")
          .Input(v.name)
          .Place(DeviceKind::kCpu, {Pick(4)});
      expected[sink] = {WeightedSum(v), static_cast<int>(v.pieces.size())};
    }
    return expected;
  }

  Job& job() { return job_.job(); }
  const std::vector<std::string>& drawn() const { return drawn_; }

 private:
  Value NewValue(std::string name, DataType type, int64_t rows, int64_t cols) {
    Value v;
    v.name = std::move(name);
    v.type = type;
    v.max_rows = rows;
    v.cols = cols;
    return v;
  }

  template <typename Element>
  void Fill(Value* v, int pieces, Element element) {
    for (int p = 0; p < pieces; ++p) {
      Piece piece{v->max_rows, v->cols, {}};
      for (int64_t i = 0; i < v->max_rows * v->cols; ++i) {
        piece.data.push_back(As(v->type, element(p, i)));
      }
      v->pieces.push_back(std::move(piece));
    }
  }

  // Stated input signatures for the op's inputs (1 in 4: all inferred).
  // A positional op is never stated split along the axis it works on:
  // there each device's part means something else than the whole's.
  // Returns false when it left them to inference.
  bool StateInputs(OpHandle& op, int inputs, int positional_axis) {
    const int mode = Pick(4);
    if (mode == 3) return false;
    ParallelSignature sig =
        mode == 2 ? BroadcastSignature() : SplitSignature(mode);
    if (mode == positional_axis) sig = BroadcastSignature();
    for (int i = 0; i < inputs; ++i) {
      while (op.conf()->input_signature_size() < op.conf()->input_size()) {
        op.conf()->add_input_signature();
      }
      *op.conf()->mutable_input_signature(i) = sig;
    }
    return true;
  }

  // What an op on `out`'s devices that infers its signatures makes of a
  // first input `in`: its layout, kept where the devices are the same (a
  // positional op's rule never applies to partial sums).
  static bool KeepsPartialSums(const Value& in, const Value& out) {
    return in.partial && out.towers > 1 && in.devices == out.devices &&
           in.replicas == out.replicas;
  }

  // scale, identity, head, slice: one input. A partial-sum input may be
  // read as partial sums by as many devices (any of them): the output
  // stays partial sums (these ops are linear).
  bool Unary(const std::string& name, const Value& in,
             const std::string& op_type) {
    Value v = NewValue(name, in.type, in.max_rows, in.cols);
    v.dynamic = in.dynamic;
    auto op = job_.Op(name, op_type).Input(in.name);
    int axis = -1;
    int64_t parts = 1, index = 0, mod = 1;
    double factor = 1;
    if (op_type == "scale") {
      factor = Pick(2) ? 2.0 : -3.0;
      op.Attr("factor", factor);
    } else if (op_type == "head") {
      axis = 0;
      mod = 1 + Pick(3);
      op.Attr("mod", mod);
      v.dynamic = true;
    } else if (op_type == "slice") {
      axis = Pick(2);
      parts = 1 + Pick(3);
      index = Pick(static_cast<int>(parts));
      op.Attr("axis", axis).Attr("parts", parts).Attr("index", index);
      if (axis == 0) {
        v.max_rows = BalancedSplitter(in.max_rows, parts).At(index).size();
      } else {
        v.cols = BalancedSplitter(in.cols, parts).At(index).size();
      }
    }
    if (in.partial && in.towers <= 4 && Pick(2)) {
      Place(op, &v, in.towers);
      if (v.towers > 1) op.InputPartialSum();
      v.partial = v.towers > 1;
      drawn_.push_back("partial sums on other devices");
    } else {
      Place(op, &v);
      v.partial = !StateInputs(op, 1, axis) && KeepsPartialSums(in, v);
    }
    for (const Piece& from : in.pieces) {
      Piece to;
      const int p = static_cast<int>(v.pieces.size());
      Range rows{0, from.rows}, cols{0, from.cols};
      if (op_type == "head") {
        rows.end = std::min<int64_t>(1 + p % mod, from.rows);
      } else if (op_type == "slice" && axis == 0) {
        rows = BalancedSplitter(from.rows, parts).At(index);
      } else if (op_type == "slice") {
        cols = BalancedSplitter(from.cols, parts).At(index);
      }
      to.rows = rows.size();
      to.cols = cols.size();
      for (int64_t r = rows.begin; r < rows.end; ++r) {
        for (int64_t c = cols.begin; c < cols.end; ++c) {
          to.data.push_back(As(v.type, from.data[r * from.cols + c] * factor));
        }
      }
      v.pieces.push_back(std::move(to));
    }
    drawn_.push_back(op_type);
    values_.push_back(std::move(v));
    return true;
  }

  // The values `first` may be added to or joined with (never a partial-sum
  // first input: the others would have to become partial sums too).
  std::vector<const Value*> Partners(const Value& first, int concat_axis) {
    std::vector<const Value*> partners;
    for (const Value& other : values_) {
      const bool fits = concat_axis < 0 ? Alike(first, other)
                                        : Joinable(first, other, concat_axis);
      if (fits) partners.push_back(&other);
    }
    return partners;
  }

  // add of 2-3 inputs alike; half the time one output read every time.
  bool Add(const std::string& name, const Value& first) {
    if (first.partial) return false;
    std::vector<const Value*> partners = Partners(first, -1);
    const int n = 2 + Pick(2);
    std::vector<const Value*> inputs = {&first};
    const bool repeat = Pick(2);
    for (int k = 1; k < n; ++k) {
      inputs.push_back(
          repeat ? &first : partners[Pick(static_cast<int>(partners.size()))]);
    }
    Value v = NewValue(name, first.type, first.max_rows, first.cols);
    v.dynamic = first.dynamic;
    auto op = job_.Op(name, "add");
    size_t count = first.pieces.size();
    for (const Value* in : inputs) {
      op.Input(in->name);
      count = std::min(count, in->pieces.size());
    }
    Place(op, &v);
    StateInputs(op, n, -1);
    for (size_t p = 0; p < count; ++p) {
      Piece piece = first.pieces[p];
      for (size_t k = 1; k < inputs.size(); ++k) {
        for (size_t i = 0; i < piece.data.size(); ++i) {
          piece.data[i] =
              As(v.type, piece.data[i] + inputs[k]->pieces[p].data[i]);
        }
      }
      v.pieces.push_back(std::move(piece));
    }
    drawn_.push_back(
        repeat ? absl::StrCat("add reading one output ", n, " times") : "add");
    values_.push_back(std::move(v));
    return true;
  }

  // concat of two values along an axis (one value twice, at times).
  bool Concat(const std::string& name, const Value& first) {
    if (first.partial) return false;
    const int axis = Pick(2);
    std::vector<const Value*> partners = Partners(first, axis);
    const Value& second =
        Pick(3) == 0 ? first
                     : *partners[Pick(static_cast<int>(partners.size()))];
    Value v = NewValue(name, first.type, first.max_rows, first.cols);
    v.dynamic = first.dynamic;
    if (axis == 0) {
      v.max_rows += second.max_rows;
    } else {
      v.cols += second.cols;
    }
    auto op = job_.Op(name, "concat").Attr("axis", axis);
    op.Input(first.name).Input(second.name);
    Place(op, &v);
    StateInputs(op, 2, axis);
    const size_t count = std::min(first.pieces.size(), second.pieces.size());
    for (size_t p = 0; p < count; ++p) {
      const Piece& a = first.pieces[p];
      const Piece& b = second.pieces[p];
      Piece piece;
      piece.rows = axis == 0 ? a.rows + b.rows : a.rows;
      piece.cols = axis == 0 ? a.cols : a.cols + b.cols;
      for (int64_t r = 0; r < piece.rows; ++r) {
        for (int64_t c = 0; c < piece.cols; ++c) {
          const bool from_a = axis == 0 ? r < a.rows : c < a.cols;
          piece.data.push_back(from_a      ? a.data[r * a.cols + c]
                               : axis == 0 ? b.data[(r - a.rows) * b.cols + c]
                                           : b.data[r * b.cols + (c - a.cols)]);
        }
      }
      v.pieces.push_back(std::move(piece));
    }
    drawn_.push_back(&second == &first ? "concat of one output twice"
                                       : "concat");
    values_.push_back(std::move(v));
    return true;
  }

  // Partial sums of a value: the whole on the op's first task, zeros on
  // the others.
  bool Partial(const std::string& name, const Value& in) {
    Value v = NewValue(name, in.type, in.max_rows, in.cols);
    v.dynamic = in.dynamic;
    v.pieces = in.pieces;
    auto op = job_.Op(name, "test_partial").Input(in.name).InputBroadcast();
    Place(op, &v);
    op.OutputSignature("out", PartialSumSignature());
    v.partial = v.towers > 1;
    drawn_.push_back("partial sums");
    values_.push_back(std::move(v));
    return true;
  }

  // A variable (float32, initial) whose step is itself plus a source:
  // v(0) = 0, v(p + 1) = v(p) + (v(p) + x(p)). It makes one piece more
  // than the sources (the last weights). Its value joins the others cast
  // to the job's type.
  bool Cycle(const std::string& name) {
    std::vector<const Value*> sources;
    for (const Value& v : values_) {
      if (v.source) sources.push_back(&v);
    }
    const Value& x = *sources[Pick(static_cast<int>(sources.size()))];
    const DataType type = x.type;
    const std::string var = name + "_var", step = name + "_step";
    std::string input = x.name;
    if (type != DT_FLOAT32) {
      input = name + "_x";
      auto cast = job_.Op(input, "cast").Input(x.name).Attr("to", "float32");
      Value ignored;
      Place(cast, &ignored);
    }
    Value v = NewValue(var, DT_FLOAT32, x.max_rows, x.cols);
    auto variable = job_.Op(var, "variable")
                        .Shape({x.max_rows, x.cols})
                        .Initial()
                        .Attr("init", "zeros")
                        .Input("delta=" + step);
    Place(variable, &v);
    Value s;
    auto add = job_.Op(step, "add").Input(var).Input(input);
    Place(add, &s);
    StateInputs(add, 2, -1);
    Piece piece{x.max_rows, x.cols,
                std::vector<double>(x.max_rows * x.cols, 0.0)};
    v.pieces.push_back(piece);
    for (const Piece& xp : x.pieces) {
      for (size_t i = 0; i < piece.data.size(); ++i) {
        const double delta =
            As(DT_FLOAT32, piece.data[i] + As(DT_FLOAT32, xp.data[i]));
        piece.data[i] = As(DT_FLOAT32, piece.data[i] + delta);
      }
      v.pieces.push_back(piece);
    }
    values_.push_back(v);
    if (type != DT_FLOAT32) {
      Value c = v;
      c.name = name;
      c.type = type;
      auto cast = job_.Op(name, "cast").Input(var).Attr("to", TypeName(type));
      Place(cast, &c);
      values_.push_back(std::move(c));
    }
    drawn_.push_back("cycle through an initial variable");
    return true;
  }

  std::mt19937_64& rng_;
  const int pieces_;
  JobBuilder job_;
  std::vector<Value> values_;
  std::vector<std::string> drawn_;
};

// The registers' bytes at one buffer each, read off the compiler's refusal
// of a budget of one byte (its words: docs/jobs.md).
int64_t BytesAtOneBuffer(const Job& job, const KernelBindings& kernels) {
  Job tight = job;
  tight.set_memory_budget_bytes(1);
  JobCompileOptions options;
  options.bindings = &kernels;
  options.probe = [](int) { return absl::OkStatus(); };
  absl::StatusOr<CompiledJob> refused = CompileJob(tight, options);
  REQUIRE_FALSE(refused.ok());
  const std::string message(refused.status().message());
  const std::string before = "job: the registers need ";
  INFO(message);
  REQUIRE(absl::StartsWith(message, before));
  int64_t bytes = 0;
  const size_t end = message.find(' ', before.size());
  REQUIRE(absl::SimpleAtoi(message.substr(before.size(), end - before.size()),
                           &bytes));
  return bytes;
}

constexpr int kRandomJobs = 40;

TEST_CASE("random jobs equal their sequential evaluation") {
  const uint64_t seed = testing::TestSeed("random jobs");
  std::mt19937_64 rng(seed);
  KernelBindings kernels = TestKernels();
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  std::map<std::string, int> drawn;
  for (int trial = 0; trial < kRandomJobs; ++trial) {
    INFO("trial " << trial << " (seed " << seed << ")");
    const DataType type =
        std::vector<DataType>{DT_FLOAT64, DT_FLOAT32, DT_INT32}[pick(3)];
    RandomJob job(&rng, 1 + pick(4));
    const int64_t rows = 1 + pick(7), cols = 1 + pick(4);
    for (int s = 1 + pick(2); s > 0; --s) job.Source(type, rows, cols);
    int cycles = 0;
    for (int m = 3 + pick(8); m > 0; --m) {
      int kind = pick(8);
      if (kind == 7 && cycles++ >= 2) kind = pick(7);
      while (!job.Operator(kind)) kind = pick(6);
    }
    const auto expected = job.Sinks();
    const bool tight = pick(4) == 0;
    if (tight) {
      job.job().set_memory_budget_bytes(BytesAtOneBuffer(job.job(), kernels));
      drawn["a budget of one buffer a register"]++;
    }
    for (const std::string& what : job.drawn()) drawn[what]++;
    const Plan plan = MustCompile(job.job(), &kernels).plan;
    if (tight) {
      for (const TaskProto& task : plan.task()) {
        for (const auto& [key, desc] : task.produced_regst_desc()) {
          CHECK(desc.register_num() == 1);
        }
      }
    }
    const auto sinks = RunPlan(plan, kernels);
    for (const auto& [sink, sum_and_pieces] : expected) {
      INFO(sink);
      CHECK(sinks.at(sink).checksum == sum_and_pieces.first);
      CHECK(sinks.at(sink).pieces == sum_and_pieces.second);
    }
  }
  // What the trials drew, so a run shows what it covered.
  for (const auto& [what, count] : drawn) {
    std::printf("random jobs: %d x %s\n", count, what.c_str());
  }
}

// GPU kernels are built in, in a build with or without CUDA (then they
// fail at run time), but not in the clang build (--config=asan...).
bool HasGpuKernels() {
  return KernelRegistry::Get().Has("h2d", DeviceKind::kGpu);
}

// The same kind of jobs over 1-3 machines: every rank's share must be a
// valid plan (processes run them in cli tests).
TEST_CASE("random jobs over machines partition into valid ranks") {
  const uint64_t seed = testing::TestSeed("random machine jobs");
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  for (int trial = 0; trial < 20; ++trial) {
    const int machines = 1 + pick(3);
    JobBuilder job(3);
    std::vector<std::string> names;
    job.Op("src", "source")
        .Shape({6, 2})
        .Place(DeviceKind::kCpu, {0}, {pick(machines)});
    names.push_back("src");
    for (int m = 0; m < 6; ++m) {
      const std::string name = absl::StrCat("op", m);
      std::vector<int32_t> where;
      for (int k = 0; k < machines; ++k) {
        if (pick(2)) where.push_back(k);
      }
      if (where.empty()) where.push_back(0);
      job.Op(name, "scale")
          .Attr("factor", 2.0)
          .Input(names[pick(static_cast<int>(names.size()))])
          .Place(pick(3) == 0 && HasGpuKernels() ? DeviceKind::kGpu
                                                 : DeviceKind::kCpu,
                 {0, 1}, where);
      names.push_back(name);
    }
    for (const std::string& name : names) {
      job.Op("sink." + name, "checksum")
          .Input(name)
          .Place(DeviceKind::kCpu, {0}, {pick(machines)});
    }
    INFO("trial " << trial << " (seed " << seed << ")");
    const Plan plan = MustCompile(job.job()).plan;
    for (int rank = 0; rank < machines; ++rank) {
      absl::StatusOr<net::LocalPlan> local =
          net::PartitionPlan(plan, rank, machines);
      INFO(local.status().message());
      REQUIRE(local.ok());
      // A machine the job leaves empty has nothing to check: its process
      // only joins the job and ends with it.
      if (local->plan.task_size() == 0) continue;
      // The net tasks' kernels come with a running job's transport; here
      // only their registers are checked.
      KernelBindings net;
      auto nothing = [](KernelContext*) { return absl::OkStatus(); };
      net.BindFunction("net_send", nothing);
      net.BindFunction("net_recv", nothing);
      CompileOptions options;
      options.bindings = &net;
      options.probe = [](int) { return absl::OkStatus(); };
      absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
          CompilePlan(local->plan, options);
      INFO(compiled.status().message());
      CHECK(compiled.ok());
    }
  }
}

}  // namespace
}  // namespace actorflow::internal
