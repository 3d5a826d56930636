"""Where a serving gateway spends its CPU under load: py-spy samples it while wrk drives it.

Starts the static upstream and one gateway process (`gateway serve`, the overhead
benchmark's configuration: telemetry and metrics on, SQLite), runs wrk at c=32 and
samples the gateway with py-spy (``pip install py-spy``; it reads the process's
memory, so it needs ptrace rights: root, or ``kernel.yama.ptrace_scope=0``). Prints
the top functions by own time (the sample's innermost frame) and by inclusive time
(the function is anywhere on the stack), each as a share of all samples.

    python bench/profile_load.py [--model fixed|routed] [--stream] [--duration 15]
                                 [--top 25] [--native] [--gil]
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import bench_config  # noqa: E402 - the sibling modules
from overhead import BODY, Target, wrk  # noqa: E402
from processes import free_port, start, stop, wait_port  # noqa: E402


def frame_name(frame: str) -> str:
    """py-spy's ``function (path/to/file.py:line)`` as ``function (package/file.py)``."""
    function, _, where = frame.partition(" (")
    path = where.rsplit(":", 1)[0]
    for marker in ("site-packages/", "/gateway/", "/lib/python3"):
        if marker in path:
            tail = path.split(marker, 1)[1]
            path = ("gateway/" + tail) if marker == "/gateway/" else tail
            break
    return f"{function} ({path})"


def summarise(raw: str, top: int) -> None:
    own: collections.Counter[str] = collections.Counter()
    inclusive: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [frame_name(f) for f in stack.split(";") if f and not f.startswith("process ")]
        frames = [f for f in frames if not f.startswith("<module>")]
        if not frames:
            continue
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    print(f"samples: {total}")
    for title, counter in (("own time", own), ("inclusive time", inclusive)):
        print(f"\ntop {top} by {title}:")
        for name, count in counter.most_common(top):
            print(f"  {100 * count / total:5.1f} %  {name}")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["fixed", "routed"], default="fixed")
    parser.add_argument("--stream", action="store_true")
    parser.add_argument("--duration", type=int, default=15)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--native", action="store_true", help="include C frames (py-spy)")
    parser.add_argument(
        "--gil",
        action="store_true",
        help="only samples of the thread holding the GIL (py-spy --gil): no runnable-but-"
        "waiting threads on a loaded machine",
    )
    args = parser.parse_args()
    for tool in ("wrk", "py-spy"):
        if shutil.which(tool) is None:
            print(f"{tool} is not installed", file=sys.stderr)
            return 2
    up_port, gw_port = free_port(), free_port()
    tmp = Path(tempfile.mkdtemp(prefix="gateway-profile-"))
    config = tmp / "bench.yaml"
    config.write_text(bench_config(str(tmp / "bench.db"), f"http://127.0.0.1:{up_port}", gw_port))
    upstream = start([sys.executable, str(ROOT / "bench" / "static_upstream.py"), str(up_port)])
    gateway = start([sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)])
    try:
        wait_port(up_port)
        wait_port(gw_port)
        target = Target("gateway", gw_port, True, gateway.pid)
        body = {**BODY, "model": args.model, "stream": args.stream}
        wrk(target, body, 32, 3)  # warm up
        load = threading.Thread(target=wrk, args=(target, body, 32, args.duration + 3))
        load.start()
        out = tmp / "profile.txt"
        command = ["py-spy", "record", "--pid", str(gateway.pid), "--format", "raw"]
        command += ["--duration", str(args.duration), "--rate", "250", "--output", str(out)]
        command += ["--nonblocking"]
        if args.native:
            command.append("--native")
        if args.gil:
            command.append("--gil")
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        load.join()
    finally:
        stop(gateway)
        stop(upstream)
    print(
        f"conditions: py-spy record --rate 250 --nonblocking{' --gil' if args.gil else ''}, "
        f"{args.duration} s, wrk -t1 c=32, "
        f"model {args.model}{', stream' if args.stream else ''}, one gateway process, "
        f"{os.cpu_count()} cores"
    )
    summarise(out.read_text(), args.top)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
