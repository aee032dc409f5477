#!/bin/bash
# Hosts as network namespaces: three "hosts" (and an intruder) on a bridge,
# each its own IP and, in a UTS namespace, its own hostname, with no
# /etc/hosts entry for any of them. Checks, as a cluster would run a job:
#   1. `actorflow launch` on each host (--nnodes=3) gives the one-host sinks;
#   2. ranks started by hand with only Slurm's variables do too, while a
#      rank of another job (another token) on the intruder is refused;
#   3. a partition between ranks 1 and 2 only (blackhole routes) ends every
#      rank within seconds, saying the link between them was lost;
#   4. real Open MPI (mpirun, its rsh agent running `ip netns exec`) starts
#      the ranks on the three hosts: without MASTER_ADDR every rank says it
#      is missing at once; with it, the one-host sinks;
#   5. real Slurm (munged, slurmctld on host 0, a slurmd per host; only the
#      master's name resolves, through /etc/netns/NS/hosts): `srun -N3`
#      gives the one-host sinks; `scancel --signal=USR1` mid-run preempts
#      the job at one cut on every rank, and `srun ... --resume` ends it
#      with the sinks of a run never stopped.
# Needs root, `ip` and `unshare`; skips with the reason otherwise (parts 4
# and 5 alone without `mpirun` or Slurm).
# Usage: hosts_netns_test.sh ACTORFLOW_BINARY PLAN
set -u
export PATH="$PATH:/usr/sbin:/sbin"  # the daemons of part 5
BIN=$(readlink -f "$1")
PLAN=$(readlink -f "$2")
TMP=${TEST_TMPDIR:-$(mktemp -d)}
TAG=af$$
NET=10.213.77

skip() { echo "SKIPPED: $*"; exit 0; }
[ "$(id -u)" = 0 ] || skip "not root: network namespaces need it"
command -v ip >/dev/null || skip "no ip (iproute2)"
command -v unshare >/dev/null || skip "no unshare (util-linux)"
ip netns add "${TAG}probe" 2>/dev/null || skip "ip netns add refused here"
ip netns del "${TAG}probe"

SL=""  # part 5's Slurm state
cleanup() {
  for pid in $(jobs -p); do kill -9 "$pid" 2>/dev/null; done
  if [ -n "$SL" ] && [ -f "$SL/munged.pid" ]; then
    kill -9 "$(cat "$SL/munged.pid")" 2>/dev/null
  fi
  for h in 0 1 2 3; do
    # Whatever still runs on a host (slurmstepd, a rank) goes with it.
    ip netns pids "${TAG}h$h" 2>/dev/null | xargs -r kill -9 2>/dev/null
    ip netns del "${TAG}h$h" 2>/dev/null
    rm -rf "/etc/netns/${TAG}h$h"
  done
  ip link del "${TAG}br" 2>/dev/null
  [ -n "$SL" ] && rm -rf "$SL"
}
trap cleanup EXIT

ip link add "${TAG}br" type bridge && ip link set "${TAG}br" up || exit 1
for h in 0 1 2 3; do
  ns=${TAG}h$h
  ip netns add "$ns" &&
    ip link add "${TAG}v$h" type veth peer name "${TAG}p$h" &&
    ip link set "${TAG}p$h" netns "$ns" &&
    ip link set "${TAG}v$h" master "${TAG}br" &&
    ip link set "${TAG}v$h" up &&
    ip -n "$ns" addr add "$NET.$((h + 1))/24" dev "${TAG}p$h" &&
    ip -n "$ns" link set "${TAG}p$h" up &&
    ip -n "$ns" link set lo up || exit 1
done

fail=0
check() {  # check WHAT CONDITION...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; fail=1; fi
}

# on HOST CMD...: CMD on that host, under its own hostname.
on() {
  local h=$1
  shift
  ip netns exec "${TAG}h$h" unshare --uts sh -c 'hostname "$0"; exec "$@"' \
    "host$h" "$@"
}

field() { grep -o "\"$2\":[^,}]*" "$1" | tail -1 | cut -d: -f2; }

expected=$("$BIN" launch --nproc=3 "$PLAN" | tail -1)
want=$(echo "$expected" | grep -o '"checksum":[0-9]*')
echo "one host: $expected"

echo "--- 1. launch on each of three hosts"
export ACTORFLOW_JOB_TOKEN=netns-test-token
for h in 2 1 0; do
  on $h "$BIN" launch --nnodes=3 --node-rank=$h --nproc=1 \
    --master-addr=$NET.1 --master-port=29577 "$PLAN" \
    >"$TMP/launch$h.out" 2>"$TMP/launch$h.err" &
done
wait
cat "$TMP/launch0.out"
check "node 0's sinks are the one-host sinks" grep -q "$want" "$TMP/launch0.out"
for h in 0 1 2; do
  check "node $h ok" grep -q '"status":"ok"' "$TMP/launch$h.out"
done
check "rank 1 says where it is from" grep -q '^\[rank 1\] ' "$TMP/launch1.err"

echo "--- 2. Slurm's variables alone; an intruder with another token"
slurm_rank() {  # HOST RANK TOKEN OUT
  on "$1" env -u MASTER_ADDR -u MASTER_PORT SLURM_PROCID="$2" SLURM_NTASKS=3 \
    SLURM_JOB_NODELIST="$NET.[1-3]" SLURM_JOB_ID=4242 \
    ACTORFLOW_JOB_TOKEN="$3" "$BIN" run "$PLAN" --no-progress \
    >"$TMP/$4.out" 2>"$TMP/$4.err"
}
slurm_rank 0 0 "$ACTORFLOW_JOB_TOKEN" slurm0 &
rank0=$!
slurm_rank 3 1 "another-job" intruder
check "the intruder's rank is refused" grep -q "another job's token" \
  "$TMP/intruder.out"
slurm_rank 1 1 "$ACTORFLOW_JOB_TOKEN" slurm1 &
slurm_rank 2 2 "$ACTORFLOW_JOB_TOKEN" slurm2 &
wait
cat "$TMP/slurm0.out"
check "Slurm's rank 0 gives the one-host sinks" grep -q "$want" \
  "$TMP/slurm0.out"
for r in 1 2; do
  check "Slurm's rank $r ok" grep -q '"status":"ok"' "$TMP/slurm$r.out"
done

echo "--- 3. a partition between ranks 1 and 2 mid-run"
CHAIN=$TMP/chain.pbtxt
cat >"$CHAIN" <<'PLAN'
total_piece_num: 1000000
task {
  task_id: 1 name: "source" stream { machine_id: 0 stream_index: 0 }
  kernel { op_type: "source" attr { key: "step" value { f: 1 } } }
  produced_regst_desc { key: "out" value {
    regst_desc_id: 10 producer_task_id: 1 consumer_task_id: 2
    register_num: 2 elem_cnt: 64 } }
}
task {
  task_id: 2 name: "a" stream { machine_id: 1 stream_index: 0 }
  kernel { op_type: "spin" attr { key: "us" value { i: 1000 } } }
  consumed_regst_desc_id { key: "in" value { regst_desc_id: 10 } }
  produced_regst_desc { key: "out" value {
    regst_desc_id: 20 producer_task_id: 2 consumer_task_id: 3
    register_num: 2 elem_cnt: 64 } }
}
task {
  task_id: 3 name: "b" stream { machine_id: 2 stream_index: 0 }
  kernel { op_type: "scale" attr { key: "factor" value { f: 2 } } }
  consumed_regst_desc_id { key: "in" value { regst_desc_id: 20 } }
  produced_regst_desc { key: "out" value {
    regst_desc_id: 30 producer_task_id: 3 consumer_task_id: 4
    register_num: 2 elem_cnt: 64 } }
}
task {
  task_id: 4 name: "sink" stream { machine_id: 0 stream_index: 1 }
  kernel { op_type: "checksum" }
  consumed_regst_desc_id { key: "in" value { regst_desc_id: 30 } }
}
PLAN
PEER=4
for h in 0 1 2; do
  on $h "$BIN" run "$CHAIN" --progress --peer-timeout=$PEER \
    --rank=$h --world-size=3 --master-addr=$NET.1 --master-port=29578 \
    >"$TMP/part$h.out" 2>"$TMP/part$h.err" &
done
# Polls rank 0's progress lines (once a second) until pieces flow.
for _ in $(seq 300); do
  grep -q '^progress: [1-9]' "$TMP/part0.err" 2>/dev/null && break
  sleep 0.1
done
check "the chain runs" grep -q '^progress: [1-9]' "$TMP/part0.err"
cut_at=$(date +%s.%N)
ip -n "${TAG}h1" route add blackhole "$NET.3/32"
ip -n "${TAG}h2" route add blackhole "$NET.2/32"
wait
took=$(awk -v a="$cut_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "every rank ended $took s after the cut (peer timeout $PEER s)"
for h in 0 1 2; do
  tail -1 "$TMP/part$h.out"
  check "rank $h failed" grep -q '"status":"error"' "$TMP/part$h.out"
  check "rank $h names the lost link" grep -Eq \
    "lost the link between rank (1 and rank 2|2 and rank 1)" "$TMP/part$h.out"
done
check "within 4 peer timeouts" awk -v t="$took" -v p="$PEER" 'BEGIN { exit !(t < 4 * p) }'

echo "--- 4. Open MPI's mpirun across the hosts"
if ! command -v mpirun >/dev/null; then
  echo "SKIPPED part 4: no mpirun (Debian's openmpi-bin)"
  exit $fail
fi
# mpirun's rsh agent: "[options] HOST COMMAND" runs COMMAND on that host.
AGENT=$TMP/netns_agent.sh
cat >"$AGENT" <<AGENT
#!/bin/sh
while [ "\${1#-}" != "\$1" ]; do shift; done
host=\$1
shift
exec ip netns exec "${TAG}h\${host#host}" unshare --uts \\
  sh -c 'hostname "\$0"; eval "\$1"' "\$host" "\$*"
AGENT
chmod +x "$AGENT"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() {  # mpi OUT ARGS...: mpirun on host 0 over hosts 0..2
  local out=$1
  shift
  timeout 120 ip netns exec "${TAG}h0" unshare --uts \
    sh -c 'hostname host0; exec "$@"' x \
    mpirun --mca plm_rsh_agent "$AGENT" --mca oob_tcp_if_include "$NET.0/24" \
    --mca btl self,tcp --mca btl_tcp_if_include "$NET.0/24" \
    --host host0,host1,host2 -np 3 "$@" >"$TMP/$out.out" 2>"$TMP/$out.err"
}
mpi mpi_nomaster "$BIN" run "$PLAN" --no-progress
check "without MASTER_ADDR every rank says so" test \
  "$(grep -c 'the ranks are on several hosts, but MASTER_ADDR is not set' \
    "$TMP/mpi_nomaster.out")" = 3
mpi mpi -x MASTER_ADDR=$NET.1 -x MASTER_PORT=29579 -x ACTORFLOW_JOB_TOKEN \
  "$BIN" run "$PLAN" --no-progress
grep '"rank":0' "$TMP/mpi.out"
check "mpirun's rank 0 gives the one-host sinks" grep -q "$want" "$TMP/mpi.out"
check "mpirun's three ranks ok" test "$(grep -c '"status":"ok"' "$TMP/mpi.out")" = 3

echo "--- 5. real Slurm: munged, slurmctld, a slurmd per host; srun -N3"
for cmd in munged slurmctld slurmd srun sinfo squeue scancel; do
  if ! command -v $cmd >/dev/null; then
    echo "SKIPPED part 5: no $cmd (Debian's slurmctld, slurmd, slurm-client, munge)"
    exit $fail
  fi
done
SL=$(mktemp -d /tmp/afslurm.XXXXXX)  # short: munge's socket path
dd if=/dev/urandom of="$SL/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$SL/munge.key"
munged --force --key-file="$SL/munge.key" --socket="$SL/munge.sock" \
  --pid-file="$SL/munged.pid" --log-file="$SL/munged.log" \
  --seed-file="$SL/munged.seed" || exit 1
mkdir -p "$SL/state"
echo "CgroupPlugin=cgroup/v1" >"$SL/cgroup.conf"
cat >"$SL/slurm.conf" <<CONF
ClusterName=afnetns
SlurmctldHost=host0($NET.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$SL/munge.sock
CredType=cred/munge
StateSaveLocation=$SL/state
SlurmdSpoolDir=$SL/slurmd-%n
SlurmctldPidFile=$SL/slurmctld.pid
SlurmdPidFile=$SL/slurmd-%n.pid
SlurmctldLogFile=$SL/slurmctld.log
SlurmdLogFile=$SL/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
ReturnToService=2
SchedulerType=sched/builtin
SelectType=select/linear
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=host0 NodeAddr=$NET.1 CPUs=2 State=UNKNOWN
NodeName=host1 NodeAddr=$NET.2 CPUs=2 State=UNKNOWN
NodeName=host2 NodeAddr=$NET.3 CPUs=2 State=UNKNOWN
PartitionName=all Nodes=host[0-2] Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF=$SL/slurm.conf
# The first host of SLURM_JOB_NODELIST is the master: the one name that
# must resolve, on every host.
for h in 0 1 2; do
  mkdir -p "/etc/netns/${TAG}h$h"
  printf '127.0.0.1 localhost\n%s host0\n' "$NET.1" >"/etc/netns/${TAG}h$h/hosts"
done
on 0 slurmctld -D -f "$SLURM_CONF" >"$SL/slurmctld.out" 2>&1 &
for h in 0 1 2; do
  on $h slurmd -D -N host$h -f "$SLURM_CONF" >"$SL/slurmd$h.out" 2>&1 &
done
for _ in $(seq 300); do  # polls until the three nodes are idle
  [ "$(on 0 sinfo -h -o %t 2>/dev/null)" = idle ] &&
    [ "$(on 0 sinfo -h -o %D 2>/dev/null)" = 3 ] && break
  sleep 0.1
done
check "three idle Slurm nodes" test "$(on 0 sinfo -h -o %t%D 2>/dev/null)" = idle3
if [ "$(on 0 sinfo -h -o %t%D 2>/dev/null)" != idle3 ]; then
  tail -5 "$SL/slurmctld.log" "$SL"/slurmd-host*.log
  exit 1
fi
on 0 srun -N3 --ntasks-per-node=1 "$BIN" run "$PLAN" --no-progress \
  >"$TMP/srun.out" 2>"$TMP/srun.err"
grep '"rank":0' "$TMP/srun.out"
check "srun's rank 0 gives the one-host sinks" grep -q "$want" "$TMP/srun.out"
check "srun's three ranks ok" test "$(grep -c '"status":"ok"' "$TMP/srun.out")" = 3

LONG="--pieces=40000 --checkpoint-dir=$SL/ckpt --checkpoint-every=2000"
whole=$("$BIN" launch --nproc=3 "$PLAN" --pieces=40000 | tail -1 |
  grep -o '"checksum":[0-9]*')
on 0 srun -N3 --ntasks-per-node=1 "$BIN" run "$PLAN" --no-progress $LONG \
  >"$TMP/preempt.out" 2>"$TMP/preempt.err" &
srun_pid=$!
for _ in $(seq 600); do  # polls the checkpoints rank 2 writes
  ls "$SL/ckpt/rank-2" 2>/dev/null | grep -q ckpt- && break
  sleep 0.1
done
job=$(on 0 squeue -h -o %i | head -1)
on 0 scancel --signal=USR1 "$job"
wait $srun_pid
cat "$TMP/preempt.out"
check "every rank preempted" test \
  "$(grep -c '"status":"preempted"' "$TMP/preempt.out")" = 3
check "every rank at one cut" test \
  "$(grep -o '"preempted_at":[0-9]*' "$TMP/preempt.out" | sort -u | wc -l)" = 1
check "SIGUSR1 named" grep -q 'SIGUSR1 to rank' "$TMP/preempt.out"
on 0 srun -N3 --ntasks-per-node=1 "$BIN" run "$PLAN" --no-progress $LONG \
  --resume >"$TMP/resumed.out" 2>"$TMP/resumed.err"
grep '"rank":0' "$TMP/resumed.out"
check "resumed from the cut" grep -q "\"resumed_from\":$(grep -o \
  '"preempted_at":[0-9]*' "$TMP/preempt.out" | head -1 | cut -d: -f2)" \
  "$TMP/resumed.out"
check "the resumed run's sinks are those of a run never stopped" \
  grep -q "$whole" "$TMP/resumed.out"
exit $fail
