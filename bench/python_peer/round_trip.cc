// The C++ side of python_peer's round trip: Session::Feed then Fetch of
// one piece through a plan (examples/python/feed_fetch.pbtxt), repeated;
// prints one JSON line with the median microseconds per round trip.
//
//   round_trip --plan=PLAN --feed=in --fetch=out --round-trips=2000
//              --samples=5
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "actorflow/plan_loader.h"
#include "actorflow/session.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "round_trip: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string plan_path, feed = "in", fetch = "out";
  int64_t round_trips = 2000, samples = 5;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      return arg.compare(0, n, flag) == 0 ? argv[i] + n : nullptr;
    };
    if (const char* v = value("--plan=")) {
      plan_path = v;
    } else if (const char* v = value("--feed=")) {
      feed = v;
    } else if (const char* v = value("--fetch=")) {
      fetch = v;
    } else if (const char* v = value("--round-trips=")) {
      if (!absl::SimpleAtoi(v, &round_trips) || round_trips < 1) {
        return Fail("--round-trips: a positive count");
      }
    } else if (const char* v = value("--samples=")) {
      if (!absl::SimpleAtoi(v, &samples) || samples < 1) {
        return Fail("--samples: a positive count");
      }
    } else {
      return Fail(absl::StrCat(
          "unknown flag ", arg,
          "; flags: --plan --feed --fetch --round-trips --samples"));
    }
  }
  if (plan_path.empty()) return Fail("--plan=PLAN is required");
  auto plan = actorflow::LoadPlan(plan_path);
  if (!plan.ok()) return Fail(std::string(plan.status().message()));
  auto session = actorflow::Session::Create(*std::move(plan));
  if (!session.ok()) return Fail(std::string(session.status().message()));
  actorflow::Tensor piece(actorflow::DT_FLOAT32, {4});
  std::vector<double> us;
  for (int64_t s = 0; s < samples; ++s) {
    const auto start = std::chrono::steady_clock::now();
    for (int64_t r = 0; r < round_trips; ++r) {
      absl::Status fed = (*session)->Feed(feed, piece);
      if (!fed.ok()) return Fail(std::string(fed.message()));
      auto got = (*session)->Fetch(fetch);
      if (!got.ok()) return Fail(std::string(got.status().message()));
    }
    const std::chrono::duration<double, std::micro> took =
        std::chrono::steady_clock::now() - start;
    us.push_back(took.count() / static_cast<double>(round_trips));
  }
  std::sort(us.begin(), us.end());
  std::printf("{\"median_us\":%.3f}\n", us[us.size() / 2]);
  return 0;
}
