#!/usr/bin/env bash
# The dense arithmetic is compiled once per vector level (nn/BUILD.bazel,
# nn/dense_kernels.cc). If one level's object defined a shared symbol that
# another object also defines (an inline function, a template instance), the
# linker would keep one copy for all: AVX-512 code could then run on a CPU
# without AVX-512. So each level's archive may define, outside its own
# local symbols, only names in its own namespaces (dense_<level>,
# Eigen_dense_<level>) and the C++ runtime's personality reference.
# Arguments: the levels' library files (the .a archives are checked).
set -uo pipefail
nm=$(command -v nm || true)
if [[ -z "$nm" ]]; then
  echo "FAIL: nm not found (binutils comes with g++)"
  exit 1
fi
status=0 checked=0
for lib in "$@"; do
  [[ "$lib" == *.a ]] || continue
  level=$(basename "$lib" .a)
  level=${level#libdense_kernels_}
  level=${level%.pic}
  checked=$((checked + 1))
  # Defined symbols with global, weak or unique binding: nm's letters in
  # upper case, and u, v, w.
  bad=$("$nm" -C --defined-only "$lib" 2>/dev/null |
    awk 'NF >= 3 && $2 ~ /^[A-Zuvw]$/' |
    grep -v -e "dense_${level}::" -e "Eigen_dense_${level}::" \
      -e "DW.ref.__gxx_personality_v0" || true)
  if [[ -n "$bad" ]]; then
    echo "FAIL: $lib ($level) defines shared symbols outside its namespaces:"
    echo "$bad" | head -20
    status=1
  else
    echo "ok: $lib ($level): only its own symbols"
  fi
done
if ((checked == 0)); then
  echo "FAIL: no archive among the arguments: $*"
  exit 1
fi
exit $status
