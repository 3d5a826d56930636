"""The gateway's added latency and throughput against the same upstream called directly.

Starts a static upstream (bench/static_upstream.py) and the gateway (`gateway serve`,
telemetry on, SQLite), then drives both with wrk: p50/p99 at concurrency 1 and
req/s at concurrency 32, for a fixed-mode call, a criteria-mode call with
routing.callHistory on, and a stream. Prints the figures with their conditions.

    python bench/overhead.py [--duration 10] [--transport aiohttp|httpx]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import KEY, bench_config  # noqa: E402 - the sibling module

BODY = {"model": "M", "messages": [{"role": "user", "content": "Say ok."}]}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def wait_port(port: int, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def wrk(
    url: str, body: dict[str, object], connections: int, duration: int, auth: bool
) -> dict[str, float]:
    headers = 'wrk.headers["Content-Type"] = "application/json"\n'
    if auth:
        headers += f'wrk.headers["Authorization"] = "Bearer {KEY}"\n'
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(f'wrk.method = "POST"\nwrk.body = {json.dumps(json.dumps(body))}\n{headers}')
    out = subprocess.run(
        ["wrk", "-t1", f"-c{connections}", f"-d{duration}s", "--latency", "-s", script.name, url],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    os.unlink(script.name)
    return {
        "p50_ms": _latency(out, "50%"),
        "p99_ms": _latency(out, "99%"),
        "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),  # type: ignore[union-attr]
        "non2xx": float(m.group(1))
        if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", out))
        else 0.0,
    }


def resident_mb(pid: int) -> float:
    """The process's resident memory now (Linux /proc), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def ttfb(port: int, body: dict[str, object], auth: bool, samples: int = 400) -> float:
    """Median time to the first body byte of a stream, one keep-alive connection."""
    import http.client

    connection = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"content-type": "application/json"}
    if auth:
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
    times.sort()
    return times[len(times) // 2]


def _latency(out: str, label: str) -> float:
    match = re.search(rf"^\s+{re.escape(label)}\s+([\d.]+)(us|ms|s)\s*$", out, re.MULTILINE)
    if match is None:
        raise RuntimeError("wrk printed no latency distribution:\n" + out)
    value, unit = float(match.group(1)), match.group(2)
    return value / 1000 if unit == "us" else value * 1000 if unit == "s" else value


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--transport", choices=["aiohttp", "httpx"], default="aiohttp")
    args = parser.parse_args()
    if shutil.which("wrk") is None:
        print("wrk is not installed (Debian package `wrk`): apt-get install wrk", file=sys.stderr)
        return 2
    up_port, gw_port = free_port(), free_port()
    tmp = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    config = tmp / "bench.yaml"
    config.write_text(bench_config(str(tmp / "bench.db"), f"http://127.0.0.1:{up_port}", gw_port))
    env = {**os.environ, "GATEWAY_UPSTREAM_TRANSPORT": args.transport}
    upstream = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "static_upstream.py"), str(up_port)]
    )
    gateway = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(up_port)
        wait_port(gw_port)
        direct = f"http://127.0.0.1:{up_port}/v1/chat/completions"
        via = f"http://127.0.0.1:{gw_port}/v1/chat/completions"
        d = args.duration
        wrk(via, {**BODY, "model": "fixed"}, 1, 2, True)  # warm up (and build some history)
        wrk(via, {**BODY, "model": "routed"}, 1, 2, True)
        rows = [
            ("direct upstream", wrk(direct, BODY, 1, d, False), wrk(direct, BODY, 32, d, False)),
            (
                "gateway, fixed mode",
                wrk(via, {**BODY, "model": "fixed"}, 1, d, True),
                wrk(via, {**BODY, "model": "fixed"}, 32, d, True),
            ),
            (
                "gateway, criteria + callHistory",
                wrk(via, {**BODY, "model": "routed"}, 1, d, True),
                wrk(via, {**BODY, "model": "routed"}, 32, d, True),
            ),
            (
                "gateway, fixed, stream",
                wrk(via, {**BODY, "model": "fixed", "stream": True}, 1, d, True),
                wrk(via, {**BODY, "model": "fixed", "stream": True}, 32, d, True),
            ),
        ]
        direct_stream = wrk(direct, {**BODY, "stream": True}, 1, d, False)
        rss_mb = resident_mb(gateway.pid)
        stream_body = {**BODY, "model": "fixed", "stream": True}
        ttfb_direct = ttfb(up_port, {**BODY, "stream": True}, False)
        ttfb_gateway = ttfb(gw_port, stream_body, True)
    finally:
        gateway.terminate()
        upstream.terminate()
        gateway.wait(15)
        upstream.wait(15)
    print(
        f"conditions: wrk -t1, {d}s per run, loopback, one gateway process (uvicorn), "
        f"upstream transport {args.transport}, telemetry on (SQLite), {os.cpu_count()} cores"
    )
    columns = ("p50 c=1", "p99 c=1", "added p50", "req/s c=32", "errors")
    print(
        f"{'run':34} {columns[0]:>9} {columns[1]:>9} {columns[2]:>10} {columns[3]:>11} "
        f"{columns[4]:>7}"
    )
    base = rows[0][1]["p50_ms"]
    for name, single, many in rows:
        base_here = direct_stream["p50_ms"] if "stream" in name else base
        added = single["p50_ms"] - base_here
        print(
            f"{name:34} {single['p50_ms']:8.3f}ms {single['p99_ms']:8.3f}ms "
            f"{added:9.3f}ms {many['rps']:11.0f} {int(single['non2xx'] + many['non2xx']):7d}"
        )
    print(f"{'direct upstream, stream':34} {direct_stream['p50_ms']:8.3f}ms")
    print(
        f"stream time to first byte (median of 400, http.client): direct {ttfb_direct:.3f} ms, "
        f"gateway {ttfb_gateway:.3f} ms, added {ttfb_gateway - ttfb_direct:.3f} ms"
    )
    print(f"gateway resident memory after the load: {rss_mb:.0f} MB")
    fixed_rps, routed_rps = rows[1][2]["rps"], rows[2][2]["rps"]
    print(f"criteria+callHistory throughput vs fixed: {100 * (routed_rps / fixed_rps - 1):+.1f} %")
    print(
        "targets: added p50 <= 1.0 ms (fixed, telemetry on); >= 1,000 req/s at c=32; "
        "criteria within 10 % of fixed; stream added TTFB <= 1.0 ms; <= 150 MB resident"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
