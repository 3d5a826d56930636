"""What the gateway's per-call features cost, beside the floor, in one run.

Starts the static upstream, the floor (bench/floor.py) and gateways that differ in one
setting each: as `bench/overhead.py` serves it (telemetry and the access line on),
``server.accessLog: false``, ``telemetry.enabled: false``, and both off. Each variant
runs in ``--processes`` processes of its own, because one process start to the next
moves a gateway's figures by up to a third on this machine (where its threads land,
its memory layout): a figure is the median over every process and round. Every round
runs the floor, then each process of each variant, wrk -t1 at c=32, fixed mode; each
round starts with a different process, so that no variant is always measured first.

Prints per variant: req/s, the event loop thread's CPU time per call (the thread that
bounds a process's req/s: the others use a few µs a call), and the share of the
floor's req/s (the median of per-run shares, each against the same round's floor), and
the loop's CPU per call as a multiple of the floor's whole process's (issue 28: <= 2x).

    python bench/feature_cost.py [--duration 5] [--rounds 4] [--processes 2]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import bench_config  # noqa: E402 - the sibling modules
from overhead import BODY, Target, wrk  # noqa: E402
from processes import cpu_seconds, free_port, start, stop, wait_port, writer_of  # noqa: E402

# (label, accessLog, telemetry.enabled, telemetry.writer)
VARIANTS = (
    ("gateway as benchmarked", True, True, "process"),
    ("telemetry.writer: inline", True, True, "inline"),
    ("accessLog: false", False, True, "process"),
    ("telemetry off", True, False, "process"),
    ("both off", False, False, "process"),
)


@dataclass
class Runs:
    rps: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)
    shares: list[float] = field(default_factory=list)
    writer_us: list[float] = field(default_factory=list)  # the writer process's CPU


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--processes", type=int, default=2, help="gateway processes per variant")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian package `wrk`): apt-get install wrk", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="gateway-features-"))
    up_port, floor_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{up_port}"
    processes = [
        start([sys.executable, str(ROOT / "bench" / "static_upstream.py"), str(up_port)]),
        start([sys.executable, str(ROOT / "bench" / "floor.py"), str(floor_port), upstream]),
    ]
    gateways: list[tuple[str, Target]] = []
    try:
        for label, access_log, telemetry, writer in VARIANTS:
            for index in range(args.processes):
                port = free_port()
                config = tmp / f"{len(gateways)}.yaml"
                db = str(tmp / f"{len(gateways)}.db")
                config.write_text(
                    bench_config(
                        db,
                        upstream,
                        port,
                        access_log=access_log,
                        telemetry=telemetry,
                        writer=writer,
                    )
                )
                serve = [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)]
                processes.append(start(serve))
                name = f"{label} #{index + 1}"
                gateways.append((label, Target(name, port, True, processes[-1].pid)))
        for port in (up_port, floor_port, *(target.port for _, target in gateways)):
            wait_port(port, 60)
        floor = Target("floor", floor_port, False, processes[1].pid)
        fixed = {**BODY, "model": "fixed"}
        wrk(floor, BODY, 32, 2)
        for _, target in gateways:
            wrk(target, fixed, 32, 4)  # warm up
        floor_runs = Runs()
        runs = {label: Runs() for label, *_ in VARIANTS}
        for round_index in range(args.rounds):
            before = cpu_seconds(floor.pid)
            measured = wrk(floor, BODY, 32, args.duration)
            floor_runs.rps.append(measured["rps"])
            floor_runs.cpu_us.append(1e6 * (cpu_seconds(floor.pid) - before) / measured["requests"])
            # Each round starts with the next variant: a figure drifts over a run (and a
            # process runs faster once it has served a while), so no variant always goes
            # first or last.
            turn = round_index * args.processes % len(gateways)
            for label, target in gateways[turn:] + gateways[:turn]:
                before = cpu_seconds(target.pid, thread=target.pid)  # the loop's
                child = writer_of(target.pid)
                child_before = cpu_seconds(child) if child is not None else 0.0
                measured = wrk(target, fixed, 32, args.duration)
                spent = cpu_seconds(target.pid, thread=target.pid) - before
                if child is not None:
                    child_spent = cpu_seconds(child) - child_before
                    runs[label].writer_us.append(1e6 * child_spent / measured["requests"])
                runs[label].rps.append(measured["rps"])
                runs[label].cpu_us.append(1e6 * spent / measured["requests"])
                runs[label].shares.append(measured["rps"] / floor_runs.rps[-1])
    finally:
        for process in reversed(processes):
            stop(process)

    print(
        f"conditions: wrk -t1 c=32, {args.duration:g} s per run, {args.rounds} rounds, "
        f"{args.processes} processes per variant, fixed mode, metrics on, SQLite, "
        f"{os.cpu_count()} cores"
    )
    floor_rps = statistics.median(floor_runs.rps)
    floor_cpu = statistics.median(floor_runs.cpu_us)
    print(f"  {'floor':26} {floor_rps:7.0f} req/s   CPU {floor_cpu:5.0f} µs/call (whole process)")
    base_cpu = statistics.median(runs[VARIANTS[0][0]].cpu_us)
    for label, *_ in VARIANTS:
        found = runs[label]
        cpu = statistics.median(found.cpu_us)
        shares = " ".join(f"{100 * share:.0f}" for share in found.shares)
        cpus = " ".join(f"{value:.0f}" for value in found.cpu_us)
        print(
            f"  {label:26} {statistics.median(found.rps):7.0f} req/s   loop {cpu:5.0f} µs/call"
            f" ({cpu - base_cpu:+4.0f}) = {cpu / floor_cpu:.2f}x the floor's"
            f"   share {100 * statistics.median(found.shares):3.0f} %\n"
            f"  {'':26} runs: share {shares} %; loop {cpus} µs"
        )
        if found.writer_us:
            writer = statistics.median(found.writer_us)
            print(f"  {'':26} its telemetry writer process: {writer:.0f} µs/call")
    print(
        f"\n75 % of the floor's req/s asks for a loop of about {floor_cpu / 0.75:.0f} µs per call;"
        f" issue 28's loop <= 2x the floor's, {2 * floor_cpu:.0f} µs"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
