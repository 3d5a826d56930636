"""The gateway against the floor and the upstream called directly, in one run.

Starts a static upstream (bench/static_upstream.py), the floor (bench/floor.py: a
raw ASGI + aiohttp proxy that only parses, swaps ``model``, forwards and answers)
and the gateway (`gateway serve`, one process, telemetry and metrics on, SQLite),
then drives them with wrk. The machine may be shared: every figure is measured in
``--rounds`` rounds, the floor and the gateway interleaved within each round, and
the median of the rounds is printed (a share is the median of the per-round
shares). Prints:

- p50/p99 at concurrency 1 and the latency each adds to the direct call;
- req/s at c=32 of the floor and of the gateway (fixed mode; criteria mode with
  routing.callHistory; streams), and the gateway's share of the floor;
- a stream's time to first byte, direct, through the floor and the gateway;
- CPU per relayed SSE event: the gateway's CPU time for streams of 203 events
  minus that for streams of 3, per extra event (the same for the floor);
- the gateway's resident memory (VmRSS, VmHWM) after the load;
- req/s at c=32 with server.workers 1 and 2 (and each worker's memory).

    python bench/overhead.py [--duration 5] [--rounds 3] [--transport aiohttp|httpx]
                             [--no-workers]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import KEY, bench_config  # noqa: E402 - the sibling modules
from processes import (  # noqa: E402
    cpu_seconds,
    free_port,
    memory_mb,
    start,
    stop,
    wait_port,
    workers_of,
    writer_of,
)

BODY: dict[str, object] = {"model": "M", "messages": [{"role": "user", "content": "Say ok."}]}
# static_upstream.py answers a stream of this many content events (plus two) to this user.
LONG_STREAM_USER = "long-stream"
LONG_STREAM_EVENTS = 200
SHORT_STREAM_EVENTS = 1


@dataclass
class Target:
    """One server under test: where it listens and what a call sends it."""

    name: str
    port: int
    auth: bool
    pid: int

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"


def wrk(
    target: Target, body: dict[str, object], connections: int, duration: float
) -> dict[str, float]:
    headers = 'wrk.headers["Content-Type"] = "application/json"\n'
    if target.auth:
        headers += f'wrk.headers["Authorization"] = "Bearer {KEY}"\n'
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n{headers}')
    command = ["wrk", "-t1", f"-c{connections}", f"-d{duration:g}s", "--latency", "-s", script.name]
    out = subprocess.run([*command, target.url], capture_output=True, text=True, check=True).stdout
    os.unlink(script.name)
    return {
        "p50_ms": _latency(out, "50%"),
        "p99_ms": _latency(out, "99%"),
        "rps": float(_match(r"Requests/sec:\s+([\d.]+)", out)),
        "requests": float(_match(r"(\d+) requests in", out)),
        "errors": float(m.group(1))
        if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", out))
        else 0.0,
    }


def _match(pattern: str, out: str) -> str:
    match = re.search(pattern, out)
    if match is None:
        raise RuntimeError(f"wrk printed no {pattern!r}:\n{out}")
    return match.group(1)


def _latency(out: str, label: str) -> float:
    match = re.search(rf"^\s+{re.escape(label)}\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    if match is None:
        raise RuntimeError("wrk printed no latency distribution:\n" + out)
    value, unit = float(match.group(1)), match.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def ttfb(target: Target, body: dict[str, object], samples: int = 300) -> float:
    """Median time to the first body byte of a stream, one keep-alive connection."""
    connection = http.client.HTTPConnection("127.0.0.1", target.port)
    headers = {"content-type": "application/json"}
    if target.auth:
        headers["authorization"] = f"Bearer {KEY}"
    payload = json.dumps(body)
    times: list[float] = []
    for _ in range(samples):
        start = time.perf_counter()
        connection.request("POST", "/v1/chat/completions", payload, headers)
        response = connection.getresponse()
        response.read1(1)
        times.append((time.perf_counter() - start) * 1000)
        response.read()
    connection.close()
    return statistics.median(times)


def cpu_per_call(
    target: Target, body: dict[str, object], duration: float, connections: int = 8
) -> float:
    """The target's CPU seconds per call over one wrk run."""
    before = cpu_seconds(target.pid)
    run = wrk(target, body, connections, duration)
    return (cpu_seconds(target.pid) - before) / max(run["requests"], 1.0)


def rounds(count: int, measure: Callable[[], dict[str, float]]) -> list[dict[str, float]]:
    return [measure() for _ in range(count)]


def median_of(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=float, default=5, help="seconds per wrk run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--transport", choices=["aiohttp", "httpx"], default="aiohttp")
    parser.add_argument("--no-workers", action="store_true", help="skip the workers=2 run")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian package `wrk`): apt-get install wrk", file=sys.stderr)
        return 2
    up_port, floor_port, gw_port, gw2_port = (free_port() for _ in range(4))
    tmp = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    upstream_url = f"http://127.0.0.1:{up_port}"
    config = tmp / "bench.yaml"
    config.write_text(bench_config(str(tmp / "bench.db"), upstream_url, gw_port))
    env = {**os.environ, "GATEWAY_UPSTREAM_TRANSPORT": args.transport}
    serve = [sys.executable, "-m", "gateway.cli", "serve", "--config"]
    processes = [
        start([sys.executable, str(ROOT / "bench" / "static_upstream.py"), str(up_port)]),
        start([sys.executable, str(ROOT / "bench" / "floor.py"), str(floor_port), upstream_url]),
        start([*serve, str(config)], env),
    ]
    d, n = args.duration, args.rounds
    try:
        for port in (up_port, floor_port, gw_port):
            wait_port(port)
        direct = Target("direct upstream", up_port, False, processes[0].pid)
        floor = Target("floor (raw ASGI + aiohttp)", floor_port, False, processes[1].pid)
        gateway = Target("gateway", gw_port, True, processes[2].pid)
        fixed = {**BODY, "model": "fixed"}
        routed = {**BODY, "model": "routed"}
        stream = {**fixed, "stream": True}
        long_stream = {**stream, "user": LONG_STREAM_USER}
        for target, body in ((floor, BODY), (gateway, fixed), (gateway, routed)):
            wrk(target, body, 32, 2)  # warm up (and build some call history)

        def latency_round() -> dict[str, float]:
            figures: dict[str, float] = {}
            for target, body in ((direct, BODY), (floor, BODY), (gateway, fixed)):
                run = wrk(target, body, 1, d)
                figures[f"{target.name} p50"] = run["p50_ms"]
                figures[f"{target.name} p99"] = run["p99_ms"]
                figures["errors"] = figures.get("errors", 0.0) + run["errors"]
            return figures

        def throughput_round() -> dict[str, float]:
            figures: dict[str, float] = {"errors": 0.0}
            plan = [
                ("floor", floor, BODY),
                ("fixed", gateway, fixed),
                ("routed", gateway, routed),
                ("floor stream", floor, {**BODY, "stream": True}),
                ("fixed stream", gateway, stream),
            ]
            for name, target, body in plan:
                before = cpu_seconds(target.pid)
                loop_before = cpu_seconds(target.pid, thread=target.pid)
                child = writer_of(target.pid) if target is gateway else None
                child_before = cpu_seconds(child) if child is not None else 0.0
                run = wrk(target, body, 32, d)
                if child is not None:
                    spent = cpu_seconds(child) - child_before
                    figures[f"{name} writer cpu"] = spent / run["requests"]
                figures[name] = run["rps"]
                figures[f"{name} cpu"] = (cpu_seconds(target.pid) - before) / run["requests"]
                loop = cpu_seconds(target.pid, thread=target.pid) - loop_before
                figures[f"{name} loop cpu"] = loop / run["requests"]
                figures["errors"] += run["errors"]
            figures["share"] = figures["fixed"] / figures["floor"]
            figures["routed vs fixed"] = figures["routed"] / figures["fixed"] - 1
            figures["stream share"] = figures["fixed stream"] / figures["floor stream"]
            return figures

        def ttfb_round() -> dict[str, float]:
            return {
                "direct": ttfb(direct, {**BODY, "stream": True}),
                "floor": ttfb(floor, {**BODY, "stream": True}),
                "gateway": ttfb(gateway, stream),
            }

        def chunk_round() -> dict[str, float]:
            extra = LONG_STREAM_EVENTS - SHORT_STREAM_EVENTS
            figures: dict[str, float] = {}
            for name, target, short, long in (
                (
                    "floor",
                    floor,
                    {**BODY, "stream": True},
                    {**BODY, "stream": True, "user": LONG_STREAM_USER},
                ),
                ("gateway", gateway, stream, long_stream),
            ):
                per_long = cpu_per_call(target, long, d)
                per_short = cpu_per_call(target, short, d)
                figures[name] = (per_long - per_short) / extra * 1e6
            return figures

        latency = rounds(n, latency_round)
        throughput = rounds(n, throughput_round)
        first_byte = rounds(n, ttfb_round)
        chunks = rounds(n, chunk_round)
        rss, hwm = memory_mb(gateway.pid)
        writer = writer_of(gateway.pid)
        writer_rss = memory_mb(writer)[0] if writer is not None else None
        workers: list[dict[str, float]] = []
        worker_memory: list[tuple[float, float]] = []
        workers_note = ""
        if not args.no_workers:
            config2 = tmp / "bench2.yaml"
            text = bench_config(str(tmp / "bench2.db"), upstream_url, gw2_port, workers=2)
            config2.write_text(text)
            processes.append(start([*serve, str(config2)], env))
            try:
                wait_port(gw2_port, 120)
            except RuntimeError:
                workers_note = "the server.workers: 2 gateway did not start listening in 120 s"
            else:
                two = Target("gateway, 2 workers", gw2_port, True, processes[-1].pid)
                time.sleep(3)  # both workers have started
                wrk(two, fixed, 32, 2)

                def workers_round() -> dict[str, float]:
                    return {
                        "1": wrk(gateway, fixed, 32, d)["rps"],
                        "2": wrk(two, fixed, 32, d)["rps"],
                        "1 c=64": wrk(gateway, fixed, 64, d)["rps"],
                        "2 c=64": wrk(two, fixed, 64, d)["rps"],
                    }

                workers = rounds(n, workers_round)
                worker_memory = [memory_mb(pid) for pid in workers_of(two.pid)]
    finally:
        for process in reversed(processes):
            stop(process)

    print(
        f"conditions: wrk -t1, {d:g} s per run, {n} rounds (floor and gateway interleaved in "
        f"each; medians of the rounds), loopback, {os.cpu_count()} cores (shared: compare "
        f"within this run only); gateway: one uvicorn process, upstream transport "
        f"{args.transport}, telemetry (SQLite) and metrics on"
    )
    print("\nlatency at c=1 (added = p50 minus the direct call's p50)")
    base = median_of(latency, "direct upstream p50")
    for name in (direct.name, floor.name, "gateway"):
        p50, p99 = median_of(latency, f"{name} p50"), median_of(latency, f"{name} p99")
        label = f"{name}, fixed mode" if name == "gateway" else name
        print(f"  {label:34} p50 {p50:7.3f} ms  p99 {p99:7.3f} ms  added {p50 - base:6.3f} ms")

    print("\nthroughput at c=32 (req/s)")
    for key, label in (
        ("floor", floor.name),
        ("fixed", "gateway, fixed mode"),
        ("routed", "gateway, criteria + callHistory"),
        ("floor stream", "floor, stream"),
        ("fixed stream", "gateway, fixed, stream"),
    ):
        runs = " ".join(f"{run[key]:6.0f}" for run in throughput)
        print(f"  {label:34} {median_of(throughput, key):7.0f}   (rounds: {runs})")
    floor_cpu = median_of(throughput, "floor cpu") * 1e6
    fixed_cpu = median_of(throughput, "fixed cpu") * 1e6
    routed_cpu = median_of(throughput, "routed cpu") * 1e6
    print(
        f"  CPU per call (the process's user + system time / calls): floor {floor_cpu:.0f} µs, "
        f"gateway fixed {fixed_cpu:.0f} µs, criteria {routed_cpu:.0f} µs"
    )
    loop_cpu = median_of(throughput, "fixed loop cpu") * 1e6
    ratios = " ".join(f"{run['fixed loop cpu'] / run['floor cpu']:.2f}" for run in throughput)
    print(
        f"  gateway fixed, its event loop thread: {loop_cpu:.0f} µs per call = "
        f"{loop_cpu / floor_cpu:.2f}x the floor's (whole process; issue 28: <= 2x)"
        f"  (rounds: {ratios})"
    )
    if "fixed writer cpu" in throughput[0]:
        writer_cpu = median_of(throughput, "fixed writer cpu") * 1e6
        print(
            f"  its telemetry writer process (telemetry.writer: process): {writer_cpu:.0f} µs"
            " per call, off the serving loop"
        )
    share = median_of(throughput, "share")
    shares = " ".join(f"{100 * run['share']:.0f}%" for run in throughput)
    print(f"  gateway (fixed) share of the floor: {100 * share:.1f} %  (rounds: {shares})")
    stream_share = median_of(throughput, "stream share")
    print(f"  gateway stream share of the floor's stream: {100 * stream_share:.1f} %")
    vs = median_of(throughput, "routed vs fixed")
    print(f"  criteria + callHistory vs fixed: {100 * vs:+.1f} %")
    errors = sum(run["errors"] for run in latency + throughput)
    print(f"  non-2xx answers in these runs: {errors:.0f}")

    print("\nstream time to first byte (median of 300 calls on one connection, http.client)")
    ttfb_direct = median_of(first_byte, "direct")
    for key in ("direct", "floor", "gateway"):
        value = median_of(first_byte, key)
        print(f"  {key:10} {value:7.3f} ms  added {value - ttfb_direct:6.3f} ms")

    print(
        f"\nCPU per relayed SSE event (streams of {LONG_STREAM_EVENTS + 3} events minus "
        f"{SHORT_STREAM_EVENTS + 3}, per extra event, c=8)"
    )
    for key in ("floor", "gateway"):
        print(f"  {key:10} {median_of(chunks, key):6.2f} µs")

    print(f"\ngateway resident memory after the load: {rss:.0f} MB (peak {hwm:.0f} MB)")
    if writer_rss is not None:
        print(f"its telemetry writer process's resident memory: {writer_rss:.0f} MB")
    if workers_note:
        print(f"\nserver.workers: {workers_note}")
    if workers:
        print("\nserver.workers (fixed mode, req/s)")
        for key, label in (
            ("1", "1 worker, c=32"),
            ("2", "2 workers, c=32"),
            ("1 c=64", "1 worker, c=64"),
            ("2 c=64", "2 workers, c=64"),
        ):
            runs = " ".join(f"{run[key]:6.0f}" for run in workers)
            print(f"  {label:34} {median_of(workers, key):7.0f}   (rounds: {runs})")
        ratio = median_of(workers, "2") / median_of(workers, "1")
        print(f"  2 workers / 1 worker at c=32: {ratio:.2f}x")
        for index, (w_rss, w_hwm) in enumerate(worker_memory):
            print(f"  worker {index + 1} resident memory: {w_rss:.0f} MB (peak {w_hwm:.0f} MB)")
    print(
        "\ntargets: gateway >= 75 % of the floor's req/s at c=32 (fixed, telemetry and metrics "
        "on); criteria within 10 % of fixed; stream added TTFB <= 0.5 ms; <= 150 MB resident"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
