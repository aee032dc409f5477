#!/usr/bin/env bash
# net_bench prints every row with its baselines and both processes end, in
# plaintext (through shared memory: the bench dies if a piece took another
# path), with --tls=1 and (as root) over a veth pair capped at 1 Gbit/s
# (--link=2, over gRPC), whose namespace is gone afterwards, and (as root)
# the partial sum over ranks on a bridge (--reduce=1). No timing is asserted
# here: the figures are the bench's output, not a test's.
set -uo pipefail
export PATH="$PATH:/usr/sbin:/sbin"  # ip and tc, for --link=2
# Under ASan: OpenSSL's per-thread state left by gRPC's TLS threads at exit
# is not a leak of ours (tools/lsan_suppressions.txt).
export LSAN_OPTIONS="suppressions=$PWD/tools/lsan_suppressions.txt${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
bench=$1
tmp=${TEST_TMPDIR:-$(mktemp -d)}
fail() { echo "FAIL: $*"; exit 1; }

"$bench" --help | grep -q "streaming, a raw TCP socket and memcpy" ||
  fail "--help"
"$bench" --samples=0 >/dev/null 2>"$tmp/err"
[[ $? == 2 ]] && grep -q -- "--samples" "$tmp/err" ||
  fail "--samples=0 must be refused, naming the flag"

small=(--samples=1 --mib=1 --min-pieces=2 --round-trips=50)
timeout 300 "$bench" "${small[@]}" >"$tmp/out" 2>&1 ||
  { cat "$tmp/out"; fail "net_bench failed (or did not end)"; }
cat "$tmp/out"
grep -q "on one host (registers through shared memory" "$tmp/out" ||
  fail "the default run must say it goes through shared memory"
grep -q "actorflow  *plain gRPC  *raw TCP  *memcpy" "$tmp/out" ||
  fail "no baseline columns"
for size in "4 KiB" "64 KiB" "1 MiB" "16 MiB"; do
  grep -Eq "^throughput, $size blobs( +[0-9]+ MB/s){4} +[0-9.]+x" "$tmp/out" ||
    fail "no throughput row with its baselines at $size"
done
grep -Eq "^zstd, 1 MiB byte masks( +[0-9]+ MB/s){4} +[0-9.]+x" "$tmp/out" ||
  fail "no row of compressed masks with its baselines"
grep -Eq "^round trip, 64 B +[0-9.]+ us +[0-9.]+ us" "$tmp/out" ||
  fail "no round-trip row"
grep -Eq "^MLP job, one epoch \(600 batches of 100\): 2 ranks [0-9]+ samples/s, 1 process \(2 devices\) [0-9]+ samples/s" "$tmp/out" ||
  fail "no MLP job row"

timeout 300 "$bench" "${small[@]}" --tls=1 >"$tmp/tls" 2>&1 ||
  { cat "$tmp/tls"; fail "net_bench --tls=1 failed (or did not end)"; }
grep -q "^throughput, 16 MiB blobs" "$tmp/tls" || fail "no TLS rows"

"$bench" --link=3 >/dev/null 2>"$tmp/err"
[[ $? != 0 ]] && grep -q -- "--link" "$tmp/err" ||
  fail "--link=3 must be refused, naming the flag"
probe="nbprobe$$"
if [[ $(id -u) == 0 ]] && command -v tc >/dev/null &&
  ip netns add "$probe" 2>/dev/null; then
  ip netns del "$probe"
  before=$(ip netns list | grep -c '^nb[0-9]')
  timeout 300 "$bench" "${small[@]}" --link=2 >"$tmp/veth" 2>&1 ||
    { cat "$tmp/veth"; fail "net_bench --link=2 failed (or did not end)"; }
  cat "$tmp/veth"
  grep -q "joined by a veth pair capped at 1 Gbit/s" "$tmp/veth" ||
    fail "--link=2 does not say where it ran"
  for size in "4 KiB" "64 KiB" "1 MiB" "16 MiB"; do
    grep -Eq "^throughput, $size blobs( +[0-9]+ MB/s){4}( +[0-9.]+x?){4}$" \
      "$tmp/veth" || fail "no veth row with its cap ratio at $size"
  done
  grep -Eq "^zstd, 1 MiB byte masks( +[0-9]+ MB/s){4}( +[0-9.]+x?){4}$" \
    "$tmp/veth" || fail "no veth row of compressed masks with its cap ratio"
  grep -q "^MLP job, one epoch" "$tmp/veth" || fail "no MLP row over veth"
  after=$(ip netns list | grep -c '^nb[0-9]')
  [[ $after == "$before" ]] || fail "--link=2 left its namespace behind"
  # The partial sum over 2 and 4 ranks on a bridge: both rows, the
  # compiler's choice named, and every namespace gone afterwards.
  before=$(ip netns list | grep -c '^nbr[0-9]')
  timeout 300 "$bench" --reduce=1 --samples=1 --reduce-mib=1 \
    --reduce-pieces=2 --reduce-ranks=4 >"$tmp/reduce" 2>&1 ||
    { cat "$tmp/reduce"; fail "net_bench --reduce=1 failed (or did not end)"; }
  cat "$tmp/reduce"
  grep -Eq "^2 +gather( +[0-9.]+){2} +[0-9.]+x +1.00x( +[0-9]+%){5}$" \
    "$tmp/reduce" ||
    fail "no 2-rank reduction row (a gather: one receiving link either way)"
  grep -Eq "^4 +scatter( +[0-9.]+){2}( +[0-9.]+x){2}( +[0-9]+%){5}$" \
    "$tmp/reduce" || fail "no 4-rank reduction row (scattered)"
  # The links' figures follow the data: gathered over two ranks, rank 1's
  # part flows into rank 0 (only acknowledgements and credit flow back);
  # scattered over four, every link carries data both ways.
  awk '$1 == 2 { gsub("%", ""); exit !($7 > $8 && $10 > $9 && $7 > 0) }' \
    "$tmp/reduce" || fail "the 2-rank gather's links do not carry it to rank 0"
  awk '$1 == 4 { gsub("%", ""); exit !($7 > 0 && $8 > 0 && $9 > 0 && $10 > 0) }' \
    "$tmp/reduce" || fail "a 4-rank scatter's link is idle one way"
  # Read on every rank: over 2 ranks each adds both parts itself.
  timeout 300 "$bench" --reduce=1 --reduce-everywhere=1 --samples=1 \
    --reduce-mib=1 --reduce-pieces=2 --reduce-ranks=2 >"$tmp/everywhere" 2>&1 ||
    { cat "$tmp/everywhere"; fail "--reduce-everywhere=1 failed"; }
  cat "$tmp/everywhere"
  grep -q "read whole on every rank" "$tmp/everywhere" ||
    fail "--reduce-everywhere=1 does not say who reads"
  grep -Eq "^2 +each-adds( +[0-9.]+){2} +[0-9.]+x +1.00x( +[0-9]+%){5}$" \
    "$tmp/everywhere" || fail "no 2-rank row where each rank adds"
  after=$(ip netns list | grep -c '^nbr[0-9]')
  [[ $after == "$before" ]] || fail "--reduce=1 left namespaces behind"
else
  echo "SKIP --link=2 and --reduce=1: need root, tc and ip netns"
fi
"$bench" --reduce=2 >/dev/null 2>"$tmp/err"
[[ $? != 0 ]] && grep -q -- "--reduce" "$tmp/err" ||
  fail "--reduce=2 must be refused, naming the flag"
"$bench" --reduce-everywhere=2 >/dev/null 2>"$tmp/err"
[[ $? != 0 ]] && grep -q -- "--reduce-everywhere" "$tmp/err" ||
  fail "--reduce-everywhere=2 must be refused, naming the flag"
echo PASS
