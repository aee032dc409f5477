#ifndef ACTORFLOW_BENCH_BENCH_UTIL_H_
#define ACTORFLOW_BENCH_BENCH_UTIL_H_

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <string>
#include <vector>

#include "cli/flags.h"

namespace actorflow::internal::bench {

inline int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

inline double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  if (n == 0) return 0;
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

// The value at fraction `q` (0..1) of the sorted values, nearest rank
// below; 0 for none.
inline double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  if (values.empty()) return 0;
  return values[static_cast<size_t>(q * (values.size() - 1))];
}

// Runs `sample` (which returns one measurement) `warmup` times unrecorded,
// then `samples` times; returns the median.
inline double MedianOf(int samples, int warmup,
                       const std::function<double()>& sample) {
  for (int i = 0; i < warmup; ++i) sample();
  std::vector<double> values;
  for (int i = 0; i < samples; ++i) values.push_back(sample());
  return Median(values);
}

struct IntFlag {
  const char* name;  // "samples"
  int64_t* value;    // holds the default
  const char* help;
  int64_t min = 1;
};

// Parses --name=N flags into `flags` with cli/flags (a bad value or an
// unknown flag exits 2, naming it); --help prints the usage generated from
// `about` and the flags, and exits 0.
inline void ParseFlags(const char* program, int argc, char** argv,
                       std::initializer_list<IntFlag> flags,
                       const char* about) {
  FlagSet set(std::string(program) + " [flags]", about);
  for (const IntFlag& flag : flags) {
    set.Int(flag.name, flag.value, flag.help, flag.min);
  }
  set.ParseOrExit(argc, argv);
}

// Several measurements taken in turn, round after round (one warm-up round
// first): each one's samples, in round order, so that a ratio can be taken
// per round (MedianRatio). PairedMedians is the case of two.
inline std::vector<std::vector<double>> AlternatedSamples(
    int samples, const std::vector<std::function<double()>>& measures) {
  for (const auto& measure : measures) measure();
  std::vector<std::vector<double>> values(measures.size());
  for (int i = 0; i < samples; ++i) {
    for (size_t m = 0; m < measures.size(); ++m) {
      values[m].push_back(measures[m]());
    }
  }
  return values;
}

// The median over rounds of a[i] / b[i].
inline double MedianRatio(const std::vector<double>& a,
                          const std::vector<double>& b) {
  std::vector<double> ratios;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ratios.push_back(a[i] / b[i]);
  }
  return Median(ratios);
}

// Medians of two measurements taken in alternation, so that both see the
// same machine (this one is shared and its speed drifts), and the median of
// their per-pair ratio baseline / subject.
struct Paired {
  double subject = 0;
  double baseline = 0;
  double ratio = 0;
};

inline Paired PairedMedians(int samples, const std::function<double()>& subject,
                            const std::function<double()>& baseline) {
  const std::vector<std::vector<double>> values =
      AlternatedSamples(samples, {subject, baseline});
  return Paired{Median(values[0]), Median(values[1]),
                MedianRatio(values[1], values[0])};
}

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_BENCH_UTIL_H_
