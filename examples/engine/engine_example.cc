// The dependency engine in a few lines: three arrays, operations that read
// and write them, and an error that travels to where the user waits.
//
//   tools/bazel run //examples/engine:engine_example
//   ACTORFLOW_ENGINE_TYPE=NaiveEngine tools/bazel run
//   //examples/engine:engine_example
#include <cstdio>
#include <numeric>
#include <vector>

#include "engine/engine.h"

int main() {
  using namespace actorflow::engine;
  Engine* engine = Engine::Get();  // $ACTORFLOW_ENGINE_TYPE picks the type
  std::printf("engine: %s\n", EngineTypeName(engine->type()));

  std::vector<double> a(1000), b(1000), c(1000);
  VarHandle va = engine->NewVariable();
  VarHandle vb = engine->NewVariable();
  VarHandle vc = engine->NewVariable();

  // a = 0, 1, 2, ...; then b = 2a and c = a + 1 may run at once (both only
  // read a); then a += b + c waits for both: a[i] = 4i + 1, sum 1999000.
  engine->PushSync([&](RunContext) { std::iota(a.begin(), a.end(), 0.0); },
                   Context::CPU(), {}, {va}, FnProperty::kNormal, 0, "fill a");
  engine->PushSync(
      [&](RunContext) {
        for (size_t i = 0; i < a.size(); ++i) b[i] = 2 * a[i];
      },
      Context::CPU(), {va}, {vb}, FnProperty::kNormal, 0, "b = 2a");
  engine->PushSync(
      [&](RunContext) {
        for (size_t i = 0; i < a.size(); ++i) c[i] = a[i] + 1;
      },
      Context::CPU(), {va}, {vc}, FnProperty::kNormal, 0, "c = a + 1");
  engine->PushSync(
      [&](RunContext) {
        for (size_t i = 0; i < a.size(); ++i) a[i] += b[i] + c[i];
      },
      Context::CPU(), {vb, vc}, {va}, FnProperty::kNormal, 0, "a += b + c");
  absl::Status status = engine->WaitForVar(va);
  double sum = std::accumulate(a.begin(), a.end(), 0.0);
  std::printf("sum(a) = %.0f after %llu writes of a (%s)\n", sum,
              static_cast<unsigned long long>(va->version()),
              status.ok() ? "ok" : std::string(status.message()).c_str());

  // A failing operation: what depends on it is skipped and the error is
  // reported where we wait.
  engine->PushAsync(
      [](RunContext, CallbackOnComplete done) {
        done(absl::NotFoundError("input.bin: no such file"));
      },
      Context::CPU(), {}, {vb}, FnProperty::kNormal, 0, "load b");
  engine->PushSync([&](RunContext) { c[0] = b[0]; }, Context::CPU(), {vb}, {vc},
                   FnProperty::kNormal, 0, "c = b");
  status = engine->WaitForVar(vc);
  std::printf("waiting for c: %s\n", status.ToString().c_str());

  for (VarHandle v : {va, vb, vc}) {
    engine->DeleteVariable(nullptr, Context::CPU(), v);
  }
  engine->WaitForAll().IgnoreError();  // the error above was seen already
  bool ok = sum == 1999000 && status.code() == absl::StatusCode::kNotFound;
  return ok ? 0 : 1;
}
