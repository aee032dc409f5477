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
#include <vector>

namespace actorflow::bench {

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
  const char* name;  // "--samples"
  int64_t* value;
};

// Parses `--name=N` arguments (N a positive integer) into `flags`; --help
// prints `help` and exits 0; anything else exits 2 with a message.
inline void ParseFlags(const char* program, int argc, char** argv,
                       std::initializer_list<IntFlag> flags, const char* help) {
  for (int i = 1; i < argc; ++i) {
    const char* arg = argv[i];
    if (std::strcmp(arg, "--help") == 0) {
      std::fputs(help, stdout);
      std::exit(0);
    }
    bool known = false;
    for (const IntFlag& flag : flags) {
      size_t len = std::strlen(flag.name);
      if (std::strncmp(arg, flag.name, len) != 0 || arg[len] != '=') continue;
      char* end = nullptr;
      long long v = std::strtoll(arg + len + 1, &end, 10);
      if (*end != '\0' || v <= 0) {
        std::fprintf(stderr, "%s: %s needs a positive integer\n", program,
                     flag.name);
        std::exit(2);
      }
      *flag.value = v;
      known = true;
    }
    if (!known) {
      std::fprintf(stderr, "%s: unknown argument '%s' (--help)\n", program,
                   arg);
      std::exit(2);
    }
  }
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
  subject();  // warm-up
  baseline();
  std::vector<double> s, b, r;
  for (int i = 0; i < samples; ++i) {
    s.push_back(subject());
    b.push_back(baseline());
    r.push_back(b.back() / s.back());
  }
  return Paired{Median(s), Median(b), Median(r)};
}

}  // namespace actorflow::bench

#endif  // ACTORFLOW_BENCH_BENCH_UTIL_H_
