#!/usr/bin/env bash
# The SDK's conformance test: a project outside actorflow (examples/plugin,
# copied out of the source tree) builds with the system compiler and its
# Makefile against the SDK tarball alone (//:sdk: include/actorflow/ and
# lib/libactorflow.so) a kernel library, loaded with `actorflow run PLAN
# --load=LIB`, a program embedding a Session, the kernel's unit test, and a
# program that writes, compiles and runs a job and feeds a Pipeline;
# then every way loading can fail, a library built against another kernel
# ABI among them.
# Args: the actorflow binary, the SDK tarball, the example's Makefile, and
# the sanitizer the SDK was built with (none, tsan, asan, asan-clang).
set -euo pipefail

actorflow=$(realpath "$1")
sdk_tar=$(realpath "$2")
source_example=$(dirname "$(realpath "$3")")
# A program linking an instrumented libactorflow.so is instrumented the same
# way, by the same compiler, so that the sanitizer's runtime comes first
# (the tsan build hides __SANITIZE_THREAD__ from the headers, see .bazelrc).
case "${4:-none}" in
  none) embed_flags=() ;;
  tsan) embed_flags=(CXXFLAGS="-O1 -fsanitize=thread -U__SANITIZE_THREAD__") ;;
  asan) embed_flags=(CXXFLAGS="-O1 -fsanitize=address") ;;
  asan-clang) embed_flags=(CXX=clang++ CXXFLAGS="-O1 -fsanitize=address") ;;
  *) echo "sdk_test: unknown sanitizer '$4'" >&2 && exit 2 ;;
esac
work=${TEST_TMPDIR:-$(mktemp -d)}
# The example as its own project: plain files, no link back into the tree.
example=$work/project
mkdir -p "$example"
cp -L "$source_example"/{Makefile,affine.pbtxt,affine_kernel.cc,affine_kernel_test.cc,job_and_pipeline.cc,run_plan.cc} "$example/"
plan=$example/affine.pbtxt

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_invalid NEEDLE ARGS...: exit status 2 and NEEDLE in the JSON line.
expect_invalid() {
  local needle=$1 out status=0
  shift
  out=$("$actorflow" "$@" 2>/dev/null) || status=$?
  ((status == 2)) || fail "$* exited $status, wanted 2: $out"
  [[ "$out" == *"$needle"* ]] || fail "$*: no '$needle' in: $out"
}

# checksum_of JSON_LINE: the checksum sink's figure.
checksum_of() {
  /usr/bin/python3 -c 'import json, sys
print(json.loads(sys.argv[1])["sinks"]["checksum"]["checksum"])' "$1"
}

mkdir -p "$work/sdk"
tar -xf "$sdk_tar" -C "$work/sdk"
[[ -f "$work/sdk/lib/libactorflow.so" ]] || fail "the SDK has no lib/libactorflow.so"
abi=$(sed -n 's/^#define ACTORFLOW_ABI_VERSION \([0-9]*\)$/\1/p' \
  "$work/sdk/include/actorflow/version.h")
[[ -n "$abi" ]] || fail "the SDK's actorflow/version.h states no ABI version"
# Every public type is in the ABI version's inline namespace: its symbols
# say actorflow::abi_vN (a library built against other headers cannot bind
# to them), while code names it actorflow::Session.
symbols=$(nm -DC "$work/sdk/lib/libactorflow.so")
for symbol in Session::Create KernelRegistry::Register LoadPlan; do
  grep -q " actorflow::abi_v$abi::$symbol(" <<<"$symbols" ||
    fail "libactorflow.so exports no actorflow::abi_v$abi::$symbol"
done
# The SDK is include/actorflow/ and the library, nothing else.
others=$(cd "$work/sdk" && find . -type f ! -path './include/actorflow/*' \
  ! -path ./lib/libactorflow.so)
[[ -z "$others" ]] || fail "the SDK ships files outside include/actorflow/: $others"
# The kernel API includes no protobuf: the headers the kernel and its test
# (kernel.h, kernel_harness.h) reach are the SDK's actorflow/ ones (none of
# its proto/) and the system's, none of protobuf's.
for source in affine_kernel.cc affine_kernel_test.cc; do
  deps=$(g++ -std=c++20 -M -I"$work/sdk/include" "$example/$source")
  if grep -q 'google/protobuf\|actorflow/proto/' <<<"$deps"; then
    fail "$source reaches protobuf headers through the kernel API: $(
      grep -o '[^ ]*\(google/protobuf\|actorflow/proto/\)[^ ]*' <<<"$deps" | head -3)"
  fi
done
make -s -C "$example" ACTORFLOW_SDK="$work/sdk" OUT="$work"
lib=$work/libaffine_kernels.so

# The library's op_type runs: 8 elements of 2p + 1 over pieces 0..9.
out=$("$actorflow" run "$plan" --load="$lib" 2>/dev/null | tail -n 1)
[[ $(checksum_of "$out") == 800 ]] || fail "run with --load: $out"
# A bare name is a file in the current directory; --load may come first,
# and twice is the same as once.
out=$(cd "$work" && "$actorflow" run --load=libaffine_kernels.so "$plan" \
  --load=./libaffine_kernels.so 2>/dev/null | tail -n 1)
[[ $(checksum_of "$out") == 800 ]] || fail "run with a bare --load: $out"
"$actorflow" validate "$plan" --load="$lib" >/dev/null ||
  fail "validate with --load"
"$actorflow" kernels --load="$lib" | grep -qx "affine cpu" ||
  fail "kernels does not list the library's op_type"

# Without the library the op_type is unknown.
expect_invalid "unknown op_type 'affine'" run "$plan"

# A library that registers a built-in op_type: refused, naming it, and its
# other kernel is not kept either.
cat >"$work/duplicate.cc" <<'CC'
#include <actorflow/kernel.h>
class Nothing final : public actorflow::Kernel {
 public:
  absl::Status Forward(actorflow::KernelContext*) override {
    return absl::OkStatus();
  }
};
ACTORFLOW_REGISTER_KERNEL("checksum", Nothing);
ACTORFLOW_REGISTER_KERNEL("fresh_op", Nothing);
CC
g++ -std=c++20 -fPIC -shared -I"$work/sdk/include" "$work/duplicate.cc" \
  -o "$work/libduplicate.so"
expect_invalid "registers op_type checksum (cpu), already registered" \
  run "$plan" --load="$work/libduplicate.so"
# The same op_type from two libraries: the second is refused.
cp "$lib" "$work/libaffine_copy.so"
expect_invalid "registers op_type affine (cpu), already registered" \
  run "$plan" --load="$lib" --load="$work/libaffine_copy.so"

# A program that embeds a Session, built against the SDK alone (its include/
# holds only the public headers, so this also proves that session.h pulls
# in nothing internal) and linked with lib/libactorflow.so, runs the job
# compiled to a plan with the library's kernel.
make -s -C "$example" ACTORFLOW_SDK="$work/sdk" OUT="$work" \
  ${embed_flags[@]+"${embed_flags[@]}"} run_plan
"$actorflow" compile "$example/affine.pbtxt" -o "$work/affine_plan.pbtxt" \
  --load="$lib" >/dev/null || fail "compile with --load"
out=$("$work/run_plan" "$work/affine_plan.pbtxt" 10 "$lib") ||
  fail "run_plan exited $?: $out"
[[ "$out" == "checksum 10 pieces, checksum 800" ]] || fail "run_plan: $out"
status=0
out=$("$work/run_plan" "$work/affine_plan.pbtxt" 10 2>&1) || status=$?
((status == 1)) && [[ "$out" == *"task 'affine' (task_id 2)"*"unknown op_type 'affine'"* ]] ||
  fail "run_plan without the library exited $status: $out"

# The kernel's unit test, KernelHarness from the SDK, built the same way.
out=$(make -s -C "$example" ACTORFLOW_SDK="$work/sdk" OUT="$work" \
  ${embed_flags[@]+"${embed_flags[@]}"} test) || fail "make test: $out"
[[ "$out" == *"affine_kernel_test: ok"* ]] || fail "make test: $out"

# A program that writes a job with JobBuilder, compiles it with CompileJob,
# runs it in a Session and feeds a Pipeline from memory, from the public
# headers alone: 100 pieces of 256 elements (1 + p in piece p) doubled sum
# to 512 * 5050 = 2585600; three batches
# of 4 x 3 int32 (100 * round + i), cast to float32, to 3798.
make -s -C "$example" ACTORFLOW_SDK="$work/sdk" OUT="$work" \
  ${embed_flags[@]+"${embed_flags[@]}"} job_and_pipeline
out=$("$work/job_and_pipeline") || fail "job_and_pipeline exited $?: $out"
[[ "$out" == "job: "*" tasks, 100 pieces, checksum 2585600"$'\n'"pipeline: 3 batches, sum 3798" ]] ||
  fail "job_and_pipeline: $out"

# The library built against the SDK with another kernel ABI version (as
# against another release's headers): refused by every loader, naming both
# versions, before any of its code runs; found by name through dlopen's
# search path (a bare name), it is refused too.
cp -r "$work/sdk" "$work/sdk_next"
sed -i "s/^#define ACTORFLOW_ABI_VERSION $abi\$/#define ACTORFLOW_ABI_VERSION $((abi + 1))/" \
  "$work/sdk_next/include/actorflow/version.h"
mkdir -p "$work/next"
make -s -C "$example" ACTORFLOW_SDK="$work/sdk_next" OUT="$work/next"
mismatch="was built against actorflow kernel ABI $((abi + 1)); this runtime has kernel ABI $abi"
expect_invalid "$mismatch" run "$plan" --load="$work/next/libaffine_kernels.so"
status=0
out=$("$work/run_plan" "$work/affine_plan.pbtxt" 10 \
  "$work/next/libaffine_kernels.so" 2>&1) || status=$?
((status == 1)) && [[ "$out" == *"$mismatch"* ]] ||
  fail "run_plan with the other ABI's library exited $status: $out"
status=0
out=$(LD_LIBRARY_PATH="$work/next" "$work/run_plan" "$work/affine_plan.pbtxt" \
  10 libaffine_kernels.so 2>&1) || status=$?
((status == 1)) && [[ "$out" == *"'libaffine_kernels.so' $mismatch"* ]] ||
  fail "run_plan with the other ABI's library by bare name exited $status: $out"

# A library not built against the kernel headers (no stamp); one that has
# the stamp but registers no kernel; one that is missing; one that is not a
# library.
echo 'int no_kernels_here() { return 0; }' >"$work/none.cc"
g++ -fPIC -shared "$work/none.cc" -o "$work/libnone.so"
expect_invalid "carries no actorflow kernel ABI stamp" \
  run "$plan" --load="$work/libnone.so"
cat >"$work/stamp_only.cc" <<'CC'
#include <actorflow/kernel.h>
const char* stamp_without_kernels() { return ACTORFLOW_KERNEL_ABI_STAMP; }
CC
g++ -std=c++20 -fPIC -shared -I"$work/sdk/include" "$work/stamp_only.cc" \
  -o "$work/libstamp_only.so"
expect_invalid "registers no kernel" run "$plan" --load="$work/libstamp_only.so"
expect_invalid "cannot be loaded" run "$plan" --load="$work/missing.so"
expect_invalid "cannot be loaded" run "$plan" --load="$plan"
expect_invalid "--load needs a kernel library" run "$plan" --load=

echo "sdk_test: all checks passed"
