"""What bench/stream_load.py measures of one target while its load client runs.

The target's processes (the process and its children, e.g. uvicorn's workers) are read
from /proc: resident memory every half second, CPU time before and after; a thread asks
the target's health path every 100 ms on one keep-alive connection; the client
(bench/stream_client.py) runs in its own process and reports what it saw.
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from processes import cpu_of, cpu_seconds, family, pin, rss_kb
from profile_load import summarise

CLIENT = Path(__file__).resolve().parent / "stream_client.py"


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


class Prober(threading.Thread):
    """GET /healthz every 100 ms on one keep-alive connection, timing each answer."""

    def __init__(self, port: int, path: str) -> None:
        super().__init__(daemon=True)
        self.port = port
        self.path = path
        self.times: list[float] = []
        self.failures = 0
        self.stopping = threading.Event()

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        while not self.stopping.is_set():
            began = time.perf_counter()
            try:
                connection.request("GET", self.path)
                answer = connection.getresponse()
                answer.read()
                if answer.status != 200:
                    self.failures += 1
                self.times.append((time.perf_counter() - began) * 1000)
            except (OSError, http.client.HTTPException):
                self.failures += 1
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            self.stopping.wait(max(0.0, 0.1 - (time.perf_counter() - began)))


@dataclass
class Target:
    name: str
    port: int
    pid: int
    path: str = "/v1/chat/completions"
    model: str = "fixed"
    headers: list[str] = field(default_factory=list)
    rows: Callable[[], int] | None = None  # the telemetry rows written so far
    health: str = "/healthz"


@dataclass
class Figures:
    name: str
    client: dict[str, Any]
    rss_idle_kb: int
    rss_plateau_kb: float
    cpu: float
    health: list[float]
    health_failures: int
    rows: int | None
    note: str = ""


def run_load(args: argparse.Namespace, target: Target, upstream_pid: int) -> Figures:
    if args.target_cpus and target.pid != upstream_pid:
        pin(target.pid, args.target_cpus)
    pids = family(target.pid)
    idle = rss_kb(pids)
    command = [sys.executable, str(CLIENT), "--port", str(target.port)]
    command += ["--path", target.path, "--model", target.model, "--streams", str(args.streams)]
    command += ["--duration", str(args.duration), "--ramp", str(args.ramp)]
    command += ["--whole-share", str(args.whole_share), "--timeout", str(args.timeout)]
    command += ["--sample", str(args.sample)]
    out_path = Path(tempfile.mkstemp(prefix="stream-load-", suffix=".json")[1])
    command += ["--out", str(out_path)]
    for header in target.headers:
        command += ["--header", header]
    rows_before = target.rows() if target.rows else None
    prober = Prober(target.port, target.health)
    cpu_before = cpu_of(pids)
    up_before = cpu_seconds(upstream_pid)
    client = subprocess.Popen(command)
    if args.load_cpus:
        pin(client.pid, args.load_cpus)
    prober.start()
    spy = profile(args, target, pids[0])
    samples: list[tuple[float, int]] = []
    while client.poll() is None:
        samples.append((time.monotonic(), rss_kb(pids)))
        time.sleep(0.5)
    client.wait()
    if spy is not None:
        spy[0].wait()
        raw = spy[1]
        print(f"\npy-spy of {target.name} ({args.profile:g} s from {args.ramp + 1:g} s in):")
        summarise(raw.read_text(), 25)
    prober.stopping.set()
    prober.join()
    cpu = cpu_of(pids) - cpu_before
    result = json.loads(out_path.read_text())
    out_path.unlink()
    result["upstream_cpu"] = cpu_seconds(upstream_pid) - up_before
    peak = result["peak"]
    plateau_times = [t for t, held in result["timeline"] if held >= 0.95 * peak and peak > 0]
    plateau = [
        kb for t, kb in samples if plateau_times and plateau_times[0] <= t <= plateau_times[-1]
    ]
    rows = _rows_written(target.rows, rows_before, result["calls"])
    return Figures(
        target.name,
        result,
        idle,
        statistics.median(plateau) if plateau else float("nan"),
        cpu,
        prober.times,
        prober.failures,
        rows,
    )


def _rows_written(rows: Callable[[], int] | None, before: int | None, calls: int) -> int | None:
    """The rows written since ``before``, once they reach ``calls`` or after 30 s: the
    writer flushes in batches, so the last ones come after the load."""
    if rows is None or before is None:
        return None
    deadline = time.monotonic() + 30
    while True:
        written = rows() - before
        if written >= calls or time.monotonic() > deadline:
            return written
        time.sleep(0.5)


def profile(
    args: argparse.Namespace, target: Target, pid: int
) -> tuple[subprocess.Popen[bytes], Path] | None:
    """py-spy recording the gateway's first process once the ramp is over (``--profile``)."""
    if not args.profile or not target.name.startswith("gateway"):
        return None
    spy = shutil.which("py-spy")
    if spy is None:
        print("py-spy is not installed (pip install py-spy): no profile", file=sys.stderr)
        return None
    out = tempfile.mkstemp(prefix="stream-load-", suffix=".txt")[1]
    command = [spy, "record", "--pid", str(pid), "--format", "raw", "--rate", "250"]
    command += ["--duration", f"{args.profile:g}", "--nonblocking", "--output", out]
    if args.gil:
        command.append("--gil")
    time.sleep(args.ramp + 1)
    quiet = subprocess.DEVNULL
    return subprocess.Popen(command, stdout=quiet, stderr=quiet), Path(out)
