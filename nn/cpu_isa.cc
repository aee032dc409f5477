#include "nn/cpu_isa.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::nn {

const char* IsaName(Isa isa) {
  switch (isa) {
    case Isa::kBaseline:
      return "baseline";
    case Isa::kAvx2:
      return "avx2";
    case Isa::kAvx512:
      return "avx512";
  }
  return "?";
}

absl::StatusOr<Isa> ParseIsa(const std::string& name) {
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (name == IsaName(isa)) return isa;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown instruction set '", name, "' (baseline, avx2 or avx512)"));
}

Isa BestSupportedIsa() {
#if defined(__x86_64__) && defined(ACTORFLOW_DENSE_MULTI_ISA)
  // GCC's and clang's checks include the operating system's support (XCR0):
  // a kernel that does not save AVX-512 state reports no avx512f.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx2") &&
      __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")) {
    return Isa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2")) {
    return Isa::kAvx2;
  }
#endif
  return Isa::kBaseline;
}

absl::StatusOr<Isa> IsaFromEnvironment() {
  const Isa best = BestSupportedIsa();
  const char* value = std::getenv("ACTORFLOW_ISA");
  if (value == nullptr || *value == '\0' || std::string(value) == "auto") {
    return best;
  }
  auto isa = ParseIsa(value);
  if (!isa.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ACTORFLOW_ISA=", value, ": ", isa.status().message()));
  }
  if (static_cast<int>(*isa) > static_cast<int>(best)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ACTORFLOW_ISA=", value, ": this CPU (or this build) runs ", "at most ",
        IsaName(best)));
  }
  return *isa;
}

}  // namespace actorflow::internal::nn
