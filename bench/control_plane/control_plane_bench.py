"""The control plane of a job at scale: 4, 32 and 64 ranks on this machine.

    tools/bazel run //bench/control_plane -- [--help]

For each size, a ring (source on rank 0, a hop on every other rank, the
sink back on rank 0) and a fan-in (a source on every rank but 0, all read on
rank 0), each started --rounds times with `actorflow launch --stats`.
Prints medians of the whole job's wall time (launch to exit), of rank 0's
join wait (until every rank joined), its two barriers (every rank connected;
every rank done), its thread count and peak RSS, with each figure's ratio to
the 4-rank job's measured in the same run. Then kills a random rank (seeded,
printed) of a running 64-rank ring with --peer-timeout=5 and reports how
long the other ranks took to exit.
"""

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def task(tid, name, machine, op, inputs=(), out=None, consumers=(), attrs=""):
    text = (f"task {{\n  task_id: {tid}\n  name: \"{name}\"\n"
            f"  stream {{ stream_index: 0 machine_id: {machine} }}\n"
            f"  kernel {{ op_type: \"{op}\" {attrs} }}\n")
    for key, regst in inputs:
        text += (f"  consumed_regst_desc_id {{ key: \"{key}\" "
                 f"value {{ regst_desc_id: [{regst}] }} }}\n")
    if out is not None:
        text += (f"  produced_regst_desc {{ key: \"out\" value {{ "
                 f"regst_desc_id: {out} producer_task_id: {tid} "
                 f"consumer_task_id: [{', '.join(map(str, consumers))}] "
                 f"register_num: 2 elem_cnt: 16 }} }}\n")
    return text + "}\n"


def ring(n, pieces, spin_us=0):
    text = f"total_piece_num: {pieces}\n"
    text += task(1, "src", 0, "source", out=1001, consumers=[2],
                 attrs='attr { key: "value" value { f: 1 } }')
    for m in range(1, n):
        op, attrs = "identity", ""
        if m == 1 and spin_us:
            op, attrs = "spin", f'attr {{ key: "us" value {{ i: {spin_us} }} }}'
        text += task(m + 1, f"hop{m}", m, op, [("in", 1000 + m)], 1001 + m,
                     [m + 2], attrs)
    text += task(n + 1, "sink", 0, "checksum", [("in", 1000 + n)])
    return text


def fan_in(n, pieces):
    text = f"total_piece_num: {pieces}\n"
    for m in range(1, n):
        text += task(2 * m - 1, f"src{m}", m, "source", out=2000 + m,
                     consumers=[2 * m],
                     attrs=f'attr {{ key: "value" value {{ f: {m} }} }}')
        text += task(2 * m, f"sink{m}", 0, "checksum", [("in", 2000 + m)])
    return text


def run_job(actorflow, plan, ranks, work):
    logs = tempfile.mkdtemp(dir=work)
    start = time.monotonic()
    done = subprocess.run(
        [actorflow, "launch", f"--nproc={ranks}", f"--log-dir={logs}", plan,
         "--stats"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True)
    wall = time.monotonic() - start
    if done.returncode != 0:
        sys.exit(f"control_plane_bench: {ranks} ranks of {plan} failed: "
                 f"{done.stdout.strip()[-400:]}")
    with open(os.path.join(logs, "rank-0.out")) as out:
        job = json.loads(out.read().strip().splitlines()[-1])["stats"]["job"]
    return {"wall_ms": wall * 1e3, "join_ms": job["join_ms"],
            "ready_barrier_ms": job["ready_barrier_ms"],
            "end_barrier_ms": job["end_barrier_ms"],
            "threads": job["threads"], "max_rss_mb": job["max_rss_mb"]}


def children(pid):
    found = []
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/children") as f:
            found += [int(c) for c in f.read().split()]
    return found


def kill_one(actorflow, work, rng):
    """Seconds from killing a random rank of a running 64-rank ring to the
    exit of every other rank (launch's exit)."""
    plan = os.path.join(work, "ring64_kill.pbtxt")
    with open(plan, "w") as f:
        f.write(ring(64, 100000, spin_us=20000))
    logs = tempfile.mkdtemp(dir=work)
    launch = subprocess.Popen(
        [actorflow, "launch", "--nproc=64", f"--log-dir={logs}", plan,
         "--peer-timeout=5", "--progress"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = os.path.join(logs, "rank-0.err")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if os.path.exists(progress):
            with open(progress) as f:
                if any(line.startswith("progress: ") and
                       not line.startswith("progress: 0/") for line in f):
                    break
        time.sleep(0.05)  # polls a file the rank writes
    ranks = children(launch.pid)
    victim = rng.choice(ranks[1:])
    killed = time.monotonic()
    os.kill(victim, signal.SIGKILL)
    launch.wait()
    return time.monotonic() - killed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--actorflow", default="actorflow",
                        help="the actorflow binary")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--sizes", default="4,32,64")
    parser.add_argument("--kills", type=int, default=3,
                        help="rounds of the killed-rank measurement")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"control_plane_bench: {os.cpu_count()} CPUs, {args.rounds} rounds, "
          f"seed {seed} (--seed replays it); medians, ratio to the "
          f"{args.sizes.split(',')[0]}-rank job")
    rng = random.Random(seed)
    keys = ["wall_ms", "join_ms", "ready_barrier_ms", "end_barrier_ms",
            "threads", "max_rss_mb"]
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as work:
        for shape, make in (("ring", ring), ("fan-in", fan_in)):
            print(f"\n{shape:8} {'ranks':>5} " +
                  " ".join(f"{k:>18}" for k in keys))
            base = None
            for n in sizes:
                plan = os.path.join(work, f"{shape}{n}.pbtxt")
                with open(plan, "w") as f:
                    f.write(make(n, 200))
                rows = [run_job(args.actorflow, plan, n, work)
                        for _ in range(args.rounds)]
                med = {k: statistics.median(r[k] for r in rows) for k in keys}
                base = base or med
                cells = []
                for k in keys:
                    ratio = med[k] / base[k] if base[k] else float("nan")
                    cells.append(f"{med[k]:>10.1f} ({ratio:4.1f}x)")
                print(f"{'':8} {n:>5} " + " ".join(f"{c:>18}" for c in cells))
        times = [kill_one(args.actorflow, work, rng) for _ in range(args.kills)]
        print(f"\nkilled rank of 64 (--peer-timeout=5): every other rank gone "
              f"after {statistics.median(times):.2f} s (median of "
              f"{len(times)}; target: within the peer timeout)")


if __name__ == "__main__":
    main()
