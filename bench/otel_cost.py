"""What telemetry.otel costs a call: the in-process ASGI harness of bench/inprocess.py, one
fixed-mode call after another, with tracing off, on (every call) and sampled at 10 %, the
spans exported over OTLP/HTTP to a local sink that accepts everything.

Prints per variant µs per call (wall time of the serving loop), the serving process's CPU
per call, the exporter process's CPU per call (OTLP encoding and sending happen there), and
the exports the sink received.

    python bench/otel_cost.py [--calls 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from gateway.api.app import create_app
from gateway.config.loader import load_config_text
from gateway.db.migrate import upgrade

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_config import bench_config
from inprocess import _lifespan, call, upstream

VARIANTS = (("off", None), ("on, every call", 1.0), ("on, sampled 10 %", 0.1))


class _Sink:
    """An OTLP/HTTP collector that answers 200 to every export and counts the bytes."""

    def __init__(self) -> None:
        received = self
        self.exports = 0

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length", "0")))
                received.exports += 1
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._server.shutdown()


def _cpu_of(pid: int) -> float:
    """A process's CPU seconds (user + system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def measure(calls: int, ratio: float | None, sink: _Sink) -> tuple[float, float, float, int]:
    tmp = Path(tempfile.mkdtemp(prefix="gateway-otel-"))
    text = bench_config(str(tmp / "b.db"), "http://upstream.invalid")
    if ratio is not None:
        text = text.replace(
            "telemetry: {enabled: true}",
            f'telemetry: {{enabled: true, otel: {{enabled: true, endpoint: "{sink.url}", '
            f"sampleRatio: {ratio}}}}}",
        )
    config = load_config_text(text)
    upgrade(config.database.url)
    app = create_app(config, transport=httpx.MockTransport(upstream))
    body = json.dumps({"model": "fixed", "messages": [{"role": "user", "content": "ok"}]})
    startup, shutdown = asyncio.Event(), asyncio.Event()
    task = asyncio.create_task(_lifespan(app, startup, shutdown))
    await startup.wait()
    for _ in range(200):
        assert await call(app, body.encode()) == 200
    exporter = getattr(app.state.runtime.tracer, "exporter_pid", None)
    await asyncio.sleep(3)  # the exporter process has imported the SDK and sent the warm-up
    exports_before = sink.exports
    child = _cpu_of(exporter) if exporter else 0.0
    cpu, wall = time.process_time(), time.perf_counter()
    for _ in range(calls):
        await call(app, body.encode())
    wall = time.perf_counter() - wall
    cpu = time.process_time() - cpu
    await asyncio.sleep(2.5)  # the exporter sends what is queued (once a second)
    child = (_cpu_of(exporter) - child) if exporter else 0.0
    shutdown.set()
    await task
    return wall / calls * 1e6, cpu / calls * 1e6, child / calls * 1e6, sink.exports - exports_before


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    args = parser.parse_args()
    sink = _Sink()
    print(f"conditions: in-process ASGI, fixed mode, telemetry on (SQLite), {args.calls} calls")
    try:
        for label, ratio in VARIANTS:
            wall, cpu, child, exports = asyncio.run(measure(args.calls, ratio, sink))
            print(
                f"  {label:18} {wall:7.1f} µs per call  serving CPU {cpu:6.1f} µs  "
                f"exporter CPU {child:6.1f} µs per call  {exports} exports received"
            )
    finally:
        sink.close()


if __name__ == "__main__":
    main()
