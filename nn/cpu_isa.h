#ifndef ACTORFLOW_NN_CPU_ISA_H_
#define ACTORFLOW_NN_CPU_ISA_H_

#include <string>

#include "absl/status/statusor.h"

// The vector instruction sets the dense arithmetic is built for. One binary
// carries a copy of the arithmetic per level (nn/dense_kernels.cc, compiled
// once per level with its own -march) and picks one when first used, so it
// runs on any x86-64 and uses AVX-512 where the CPU has it.
namespace actorflow::internal::nn {

enum class Isa {
  kBaseline,  // x86-64 (SSE2): every x86-64 CPU; the only level elsewhere
  kAvx2,      // x86-64-v3: AVX2, FMA, BMI2
  kAvx512,    // x86-64-v4: AVX-512 F, BW, CD, DQ, VL
};

// "baseline", "avx2", "avx512".
const char* IsaName(Isa isa);
absl::StatusOr<Isa> ParseIsa(const std::string& name);

// The highest level this CPU (and its operating system) runs, among those
// this binary was built with.
Isa BestSupportedIsa();

// The level the dense arithmetic uses in this process: BestSupportedIsa(),
// or the lower one that $ACTORFLOW_ISA names ("baseline", "avx2", "avx512";
// empty or "auto": the best). Results are bit-identical between two runs
// only at the same level, so $ACTORFLOW_ISA also pins results across
// machines. An unknown name, or a level the CPU lacks, is an error naming
// the variable, its value and what this CPU runs.
absl::StatusOr<Isa> IsaFromEnvironment();

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_CPU_ISA_H_
