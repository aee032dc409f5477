#!/usr/bin/env bash
# tools/bazel trims its disk cache, oldest files first, and then runs Bazel:
# a cache over its budget must never stop the build (it once ended the
# wrapper with sort's SIGPIPE status before Bazel started).
# Arg: tools/bazel.
set -euo pipefail

wrapper=$(realpath "$1")
work=${TEST_TMPDIR:-$(mktemp -d)}
cache=$work/cache
gib=$((1024 * 1024 * 1024))

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# 3 GiB of sparse 1 MiB files against a 2 GiB budget: enough lines that sort
# is still writing when the trim has deleted what it must.
mkdir -p "$cache/old" "$cache/new"
(cd "$cache/old" && truncate -s 1M f{1..1500} && touch -d '2 days ago' f*)
(cd "$cache/new" && truncate -s 1M f{1..1500})

# Bazel itself is replaced by echo: the test checks what it would be given.
run_wrapper() {
  ACTORFLOW_DISK_CACHE=$cache ACTORFLOW_DISK_CACHE_GB=2 \
    ACTORFLOW_SKIP_INSTALL=1 BAZEL_REAL=/bin/echo "$wrapper" "$@"
}

out=$(run_wrapper build //some:target) || fail "tools/bazel exited $?: $out"
[[ "$out" == "build --disk_cache=$cache/"*" //some:target" ]] ||
  fail "Bazel got: $out"
total=$(du -sb "$cache" | cut -f1)
((total <= 2 * gib * 8 / 10 + 1024 * 1024)) ||
  fail "cache holds $total bytes after trimming to 80% of 2 GiB"
(($(find "$cache/new" -type f | wc -l) == 1500)) ||
  fail "trimming deleted newer files while older ones were left"
(($(find "$cache/old" -type f | wc -l) < 1500)) || fail "nothing was trimmed"

# Trimmed within the hour: the next run leaves an over-full cache alone.
(cd "$cache/old" && truncate -s 1M g{1..1500})
before=$(find "$cache" -type f | wc -l)
run_wrapper test //x >/dev/null || fail "second run exited $?"
(($(find "$cache" -type f | wc -l) == before)) ||
  fail "trimmed again within the hour"
echo "PASS"
