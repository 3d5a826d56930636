"""Where an open paced stream's memory goes: tracemalloc in a serving gateway, K streams vs 0.

Starts the paced upstream (bench/paced_upstream.py) and one gateway process (`gateway
serve`, telemetry on in SQLite, the access log on) with tracemalloc tracing, warms it with
a few streams, then takes a snapshot with no call open and another with ``--streams``
paced streams open (the load client of bench/stream_load.py, in its own process, streams
only, answers long enough to outlast the snapshot). Prints the gateway's own allocations
per open call (the difference of the two snapshots over the client connections open
then; how many of them relay already is printed too), the largest differences by where
they were allocated, and the process's resident memory per open call for comparison
(higher: what tracemalloc does not see, the allocator's slack, and the tracing's own
cost). With ``--frames 0`` nothing is traced: the resident memory per open call alone.

    python bench/stream_memory.py [--streams 300] [--frames 8] [--top 30]
        [--group traceback|lineno|filename] [--wait 8]
    python bench/stream_memory.py --frames 0 --streams 1000   # resident memory only, untraced
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import bench_config  # noqa: E402 - the sibling modules
from processes import (  # noqa: E402
    free_port,
    rss_kb,
    start,
    stop,
    wait_port,
)

# The gateway, run under tracemalloc; SIGUSR1 writes a snapshot and the open calls' count.
_SERVE = """
import gc, os, signal, sys, tracemalloc
if {frames}:
    tracemalloc.start({frames})
count = 0
def dump(*_):
    global count
    gc.collect()
    snapshot = tracemalloc.take_snapshot() if {frames} else None  # before the count
    names = [type(o).__name__ for o in gc.get_objects()]
    counts = f"{{names.count('StreamRelay')}} {{names.count('EdgeProtocol')}}"
    del names
    if snapshot is not None:
        snapshot.dump(f"{out}.{{count}}")
    del snapshot
    with open(f"{out}.{{count}}.tmp", "w") as file:
        file.write(counts)
    os.rename(f"{out}.{{count}}.tmp", f"{out}.{{count}}.relays")
    count += 1
signal.signal(signal.SIGUSR1, dump)
from gateway.cli import main
sys.exit(main(["serve", "--config", {config!r}]))
"""


def _client(port: int, streams: int, duration: float, out: Path) -> subprocess.Popen[bytes]:
    command = [sys.executable, str(ROOT / "bench" / "stream_client.py")]
    command += ["--port", str(port), "--streams", str(streams), "--duration", str(duration)]
    command += ["--ramp", "1", "--whole-share", "0", "--timeout", "120", "--sample", "0.01"]
    command += ["--header", "authorization:Bearer sk-bench-0123456789", "--out", str(out)]
    return start(command)


def _snapshot(
    pid: int, out: Path, index: int
) -> tuple[tracemalloc.Snapshot | None, tuple[int, int]]:
    os.kill(pid, signal.SIGUSR1)
    relays = Path(f"{out}.{index}.relays")
    deadline = time.monotonic() + 120
    while not relays.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    path = Path(f"{out}.{index}")
    snapshot = tracemalloc.Snapshot.load(str(path)) if path.exists() else None
    relaying, connections = relays.read_text().split()
    return snapshot, (int(relaying), int(connections))


def _short(frame: tracemalloc.Frame) -> str:
    parts = Path(frame.filename).parts
    keep = parts.index("gateway") if "gateway" in parts[-3:] else max(len(parts) - 2, 0)
    return f"{'/'.join(parts[keep:])}:{frame.lineno}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--frames", type=int, default=8, help="0: no tracing, RSS only")
    parser.add_argument("--wait", type=float, default=8, help="seconds before the snapshot")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--group", default="traceback", choices=["traceback", "lineno", "filename"])
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="gateway-streammem-"))
    up_port, port = free_port(), free_port()
    upstream = start([sys.executable, str(ROOT / "bench" / "paced_upstream.py"), str(up_port)])
    config = scratch / "gateway.yaml"
    text = bench_config(str(scratch / "telemetry.db"), f"http://127.0.0.1:{up_port}", port)
    config.write_text(text.replace("server: {", "server: {maxConnections: 4096, ", 1))
    out = scratch / "snap"
    script = _SERVE.format(frames=args.frames, out=out, config=str(config))
    gateway = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.DEVNULL)
    try:
        wait_port(up_port)
        wait_port(port, 120)
        time.sleep(2)
        warm = _client(port, 20, 6, scratch / "warm.json")  # first calls' one-time work
        warm.wait()
        time.sleep(2)
        idle_rss = rss_kb([gateway.pid])
        before, open_before = _snapshot(gateway.pid, out, 0)
        load = _client(port, args.streams, 60, scratch / "load.json")
        time.sleep(args.wait)  # ramped (1 s), first events (0.3 s), tracemalloc's slowness
        held_rss = rss_kb([gateway.pid])
        after, open_after = _snapshot(gateway.pid, out, 1)
        load.terminate()
        load.wait()
    finally:
        stop(gateway)
        stop(upstream)
    # Per open call (a client connection): a call still opening its stream holds memory
    # too, and under load some are.
    opened = open_after[1] - open_before[1]
    print(f"open: {open_before[1]} -> {open_after[1]} calls, {open_after[0]} of them relaying")
    print(
        f"RSS: {idle_rss / 1024:.0f} -> {held_rss / 1024:.0f} MB, "
        f"{(held_rss - idle_rss) / max(opened, 1):.1f} KiB a stream"
        + (" (traced process)" if args.frames else "")
    )
    if before is None or after is None:
        return 0
    diff = after.compare_to(before, args.group)
    total = sum(stat.size_diff for stat in diff)
    print(f"traced: {total / 1024:.0f} KiB more, {total / max(opened, 1) / 1024:.2f} KiB a stream")
    print(f"\ntop {args.top} by size (bytes a stream, objects a stream, where):")
    for stat in diff[: args.top]:
        where = " <- ".join(_short(frame) for frame in reversed(list(stat.traceback)))
        print(
            f"{stat.size_diff / max(opened, 1):8.0f} B {stat.count_diff / max(opened, 1):6.1f}  "
            f"{where[:400]}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
