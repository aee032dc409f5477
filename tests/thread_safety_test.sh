#!/usr/bin/env bash
# The thread-safety analysis (--config=thread_safety) checks what the
# annotations in base/mutex.h and thread/spin_mutex.h say: correctly locked
# code compiles with -Werror=thread-safety, and code touching guarded state
# without its lock does not, with clang naming the field and the mutex.
set -uo pipefail
clang=$(command -v clang++ || command -v clang-14 || true)
if [[ -z "$clang" ]]; then
  echo "FAIL: clang++ not found (tools/bazel installs clang)"
  exit 1
fi
flags=(-std=c++20 -fsyntax-only -Wthread-safety -Werror=thread-safety -I. -Iinclude)
dir=tests/thread_safety
status=0

if ! out=$("$clang" "${flags[@]}" "$dir/locked.cc" 2>&1); then
  echo "FAIL: locked.cc should compile:"
  echo "$out"
  status=1
else
  echo "ok: locked.cc compiles"
fi

check_refused() {
  local file=$1 expected=$2
  if out=$("$clang" "${flags[@]}" "$dir/$file" 2>&1); then
    echo "FAIL: $file compiled; the analysis checked nothing"
    status=1
  elif ! grep -qF "$expected" <<<"$out"; then
    echo "FAIL: $file refused, but not with \"$expected\":"
    echo "$out"
    status=1
  else
    echo "ok: $file refused: $(grep -m1 -F "$expected" <<<"$out")"
  fi
}
check_refused unlocked.cc "reading variable 'count_' requires holding mutex 'mu_'"
check_refused unlocked_spin.cc "writing variable 'count_' requires holding mutex 'mu_' exclusively"
exit $status
