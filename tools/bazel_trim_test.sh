#!/usr/bin/env bash
# tools/bazel trims its disk cache, oldest files first, and then runs Bazel:
# a cache over its budget must never stop the build (it once ended the
# wrapper with sort's SIGPIPE status before Bazel started). It also deletes
# the Bazel output bases of workspaces that no longer exist.
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
users=$work/bazel_user_root
mkdir -p "$users"
run_wrapper() {
  ACTORFLOW_DISK_CACHE=$cache ACTORFLOW_DISK_CACHE_GB=2 \
    ACTORFLOW_BAZEL_USER_ROOT=$users \
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
# Output bases: one whose workspace is gone goes (read-only files, and its
# server, told by its command line, stopped); one whose workspace exists
# stays, as does anything without DO_NOT_BUILD_HERE, and a process that
# only has a stale base's old pid is left alone.
make_base() {  # make_base NAME WORKSPACE
  mkdir -p "$users/$1/server" "$users/$1/execroot/x"
  printf '%s' "$2" >"$users/$1/DO_NOT_BUILD_HERE"
  touch "$users/$1/execroot/x/out.o"
  chmod -R a-w "$users/$1/execroot"
}
mkdir -p "$work/live_workspace"
make_base gone_with_server "$work/deleted_workspace_1"
make_base gone_stale_pid "$work/deleted_workspace_2"
make_base live "$work/live_workspace"
mkdir -p "$users/not_a_base"
# A stand-in server: its command line names its output base as Bazel's does.
(exec -a "--output_base=$users/gone_with_server" sleep 60) &
server=$!
sleep 60 &
bystander=$!
echo "$server" >"$users/gone_with_server/server/server.pid.txt"
echo "$bystander" >"$users/gone_stale_pid/server/server.pid.txt"
rm -f "$users/.pruned"
run_wrapper build //x >/dev/null || fail "run with stale bases exited $?"
[[ ! -e "$users/gone_with_server" ]] || fail "a stale output base was kept"
[[ ! -e "$users/gone_stale_pid" ]] || fail "a stale output base was kept"
[[ -f "$users/live/execroot/x/out.o" ]] || fail "a live output base was deleted"
[[ -d "$users/not_a_base" ]] || fail "a directory that is no base was deleted"
wait "$server" && fail "the stale base's server was not stopped"
kill -0 "$bystander" 2>/dev/null || fail "a process with a stale pid was killed"
kill "$bystander"
# Pruned within the hour: a new stale base waits for the next hour.
make_base gone_later "$work/deleted_workspace_3"
run_wrapper build //x >/dev/null || fail "third run exited $?"
[[ -d "$users/gone_later" ]] || fail "pruned again within the hour"
chmod -R u+w "$users"
echo "PASS"
