"""Many long, paced streams at once: what a gateway adds to each, and what holding them costs.

Starts a paced upstream (bench/paced_upstream.py: first event after ``--first-ms``, then
``--rate`` events a second, 300-1,000 tokens an answer, usage in the last chunk; a share
``--whole-share`` of the calls are whole answers that take 1-5 s) and, one after the
other on that upstream, opens ``--streams`` concurrent calls for ``--duration`` seconds
(each caller calls again until then) against:

- the upstream directly (the reference);
- the gateway (`gateway serve`, telemetry on in SQLite, metrics and the access log on,
  ``--workers`` processes); then on PostgreSQL when ``--postgres URL`` is given or
  GATEWAY_TEST_POSTGRES_URL is set (a scratch database, created and dropped here);
- the floor (bench/floor.py: raw ASGI + aiohttp, relays a stream unparsed);
- LiteLLM's proxy where it is installed (a line says so where it is not; Portkey's
  gateway is a Node program: the same).

The load comes from a client in its own process (raw asyncio connections, one per
caller, kept alive). Every event the upstream writes carries the moment it was written,
so the client knows each event's delay. Printed for each target: the streams held at
once (peak), errors, time to first event p50/p99 and what each adds over the direct
run, the per-event delay p99 (upstream write to client read) and the inter-event gap
p99 and what each adds, resident memory at the plateau (all streams open) and per open
stream over the idle process, CPU per relayed event (the target's process(es)), rows
written vs calls made, and a ``/healthz`` probe every 100 ms during the run (p50, p99).

    python bench/stream_load.py [--streams 2000] [--duration 30] [--workers 1]
        [--first-ms 300] [--rate 25] [--tokens-per-event 3] [--whole-share 0.1]
        [--targets direct,sqlite,postgres,floor,litellm] [--postgres URL]
        [--profile SECONDS [--gil]]   # py-spy the gateway during its run (pip install py-spy)

The machine is what limits this benchmark: the upstream and the client are Python
processes too, and they need CPU beside the gateway (their shares are printed).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import KEY, bench_config  # noqa: E402 - the sibling modules
from overhead import cpu_seconds, free_port, start, stop, wait_port  # noqa: E402
from profile_load import summarise  # noqa: E402

MARK = b'"system_fingerprint":"t'
PROMPT = [{"role": "user", "content": "Write a long answer."}]

# --- the load client (its own process) ---------------------------------------------


@dataclass
class Results:
    calls: int = 0
    streams: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    events: int = 0
    no_usage: int = 0
    ttft: list[float] = field(default_factory=list)  # ms
    delays: list[float] = field(default_factory=list)  # ms, sampled
    gaps: list[float] = field(default_factory=list)  # ms, sampled
    whole: list[float] = field(default_factory=list)  # ms
    held: int = 0
    peak: int = 0
    timeline: list[tuple[float, int]] = field(default_factory=list)

    def error(self, kind: str) -> None:
        self.errors += 1
        self.error_kinds[kind] = self.error_kinds.get(kind, 0) + 1


class Call(asyncio.Protocol):
    """One keep-alive connection; one request at a time. Parses just enough HTTP/1.1
    (status, content-length or chunked) and SSE (blocks split on a blank line)."""

    def __init__(self, results: Results, sample: float) -> None:
        self.results = results
        self.sample = sample
        self.transport: Any = None
        self.done: asyncio.Future[str] | None = None
        self.lost = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._finish("connection lost")

    def send(self, request: bytes, stream: bool) -> asyncio.Future[str]:
        self.done = asyncio.get_running_loop().create_future()
        self.stream = stream
        self.buffer = b""
        self.head: bytes | None = None
        self.chunked = False
        self.length = -1
        self.body = 0
        self.pending = b""  # an SSE block not complete yet
        self.chunk_left = 0
        self.whole = bytearray()
        self.started = time.monotonic()
        self.first = 0.0
        self.last = 0.0
        self.saw_done = False
        self.saw_usage = False
        self.saw_error = False
        self.transport.write(request)
        return self.done

    def _finish(self, outcome: str) -> None:
        if self.done is not None and not self.done.done():
            if self.first:
                self.results.held -= 1
            self.done.set_result(outcome)

    def data_received(self, data: bytes) -> None:
        if self.done is None or self.done.done():
            return
        if self.head is None:
            self.buffer += data
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            self.head = self.buffer[:end].lower()
            data, self.buffer = self.buffer[end + 4 :], b""
            if not self.head.startswith(b"http/1.1 200"):
                self._finish("status " + self.head[9:12].decode())
                self.transport.close()
                return
            self.chunked = b"transfer-encoding: chunked" in self.head
            for line in self.head.split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    self.length = int(line.split(b":", 1)[1])
        if self.chunked:
            self._dechunk(data)
        else:
            self._body(data)
            self.body += len(data)
            if self.length >= 0 and self.body >= self.length:
                self._end()

    def _dechunk(self, data: bytes) -> None:
        buffer = self.buffer + data if self.buffer else data
        self.buffer = b""
        position = 0
        size = len(buffer)
        while position < size:
            if self.chunk_left > 0:
                take = min(self.chunk_left, size - position)
                self._body(buffer[position : position + take])
                position += take
                self.chunk_left -= take
                if self.chunk_left == 0:
                    self.chunk_left = -2  # the CRLF after the data
                continue
            if self.chunk_left < 0:
                skip = min(-self.chunk_left, size - position)
                position += skip
                self.chunk_left += skip
                continue
            line_end = buffer.find(b"\r\n", position)
            if line_end < 0:
                self.buffer = buffer[position:]
                return
            length = int(buffer[position:line_end].split(b";", 1)[0], 16)
            position = line_end + 2
            if length == 0:
                self._end()
                return
            self.chunk_left = length

    def _body(self, data: bytes) -> None:
        if not self.stream:
            self.whole += data
            return
        now = time.monotonic()
        blocks = (self.pending + data if self.pending else data).split(b"\n\n")
        self.pending = blocks.pop()
        results = self.results
        for block in blocks:
            at = block.find(MARK)
            if at >= 0:
                results.events += 1
                if not self.first:
                    self.first = now
                    results.ttft.append((now - self.started) * 1000)
                    results.held += 1
                    results.peak = max(results.peak, results.held)
                elif random.random() < self.sample:
                    results.gaps.append((now - self.last) * 1000)
                self.last = now
                if random.random() < self.sample:
                    start = at + len(MARK)
                    stamp = float(block[start : block.index(b'"', start)])
                    results.delays.append((now - stamp) * 1000)
                if b'"usage"' in block:
                    self.saw_usage = True
            elif b"[DONE]" in block:
                self.saw_done = True
            elif b'"error"' in block:
                self.saw_error = True
            elif block.startswith(b"data:") and b'"choices"' in block:
                # A peer that re-encodes the chunks (and drops the stamp): still counted.
                results.events += 1
                if not self.first:
                    self.first = now
                    results.ttft.append((now - self.started) * 1000)
                    results.held += 1
                    results.peak = max(results.peak, results.held)
                elif random.random() < self.sample:
                    results.gaps.append((now - self.last) * 1000)
                self.last = now
                if b'"usage"' in block:
                    self.saw_usage = True

    def _end(self) -> None:
        if not self.stream:
            ok = b'"choices"' in self.whole and b'"usage"' in self.whole
            if ok:
                self.results.whole.append((time.monotonic() - self.started) * 1000)
            self._finish("ok" if ok else "bad whole answer")
            return
        if self.saw_error:
            self._finish("error event")
        elif not self.saw_done:
            self._finish("no [DONE]")
        else:
            if not self.saw_usage:
                self.results.no_usage += 1
            self._finish("ok")


def _request(port: int, path: str, headers: dict[str, str], body: dict[str, Any]) -> bytes:
    payload = json.dumps(body).encode()
    lines = [f"POST {path} HTTP/1.1", f"host: 127.0.0.1:{port}", "content-type: application/json"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    lines.append(f"content-length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


async def _caller(
    args: argparse.Namespace, results: Results, deadline: float, delay: float
) -> None:
    await asyncio.sleep(delay)
    loop = asyncio.get_running_loop()
    headers = dict(h.split(":", 1) for h in args.header)
    call: Call | None = None
    while time.monotonic() < deadline:
        if call is None or call.lost:
            try:
                _, call = await loop.create_connection(
                    lambda: Call(results, args.sample), "127.0.0.1", args.port
                )
            except OSError as exc:
                results.calls += 1
                results.error(f"connect: {type(exc).__name__}")
                await asyncio.sleep(0.5)
                continue
        stream = random.random() >= args.whole_share
        body: dict[str, Any] = {
            "model": args.model,
            "messages": PROMPT,
            "max_tokens": random.randint(300, 1000),
        }
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        results.calls += 1
        results.streams += stream
        try:
            outcome = await asyncio.wait_for(
                call.send(_request(args.port, args.path, headers, body), stream), args.timeout
            )
        except TimeoutError:
            outcome = "timeout"
            call.transport.close()
            call = None
        if outcome != "ok":
            results.error(outcome)
            if call is not None and not call.lost:
                call.transport.close()
            call = None


async def _timeline(results: Results, until: asyncio.Event) -> None:
    while not until.is_set():
        results.timeline.append((time.monotonic(), results.held))
        await asyncio.sleep(0.25)


async def client_main(args: argparse.Namespace) -> dict[str, Any]:
    results = Results()
    began = time.monotonic()
    deadline = began + args.duration
    done = asyncio.Event()
    watcher = asyncio.create_task(_timeline(results, done))
    callers = [
        _caller(args, results, deadline, random.uniform(0, args.ramp)) for _ in range(args.streams)
    ]
    await asyncio.gather(*callers)
    done.set()
    await watcher
    usage = os.times()
    return {**results.__dict__, "wall": time.monotonic() - began, "cpu": usage.user + usage.system}


# --- the orchestrator ----------------------------------------------------------------


def rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total


def family(pid: int) -> list[int]:
    """The process and its children (uvicorn's workers), not multiprocessing's tracker."""
    found = [pid]
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            for child in (task / "children").read_text().split():
                command = Path(f"/proc/{child}/cmdline").read_bytes()
                if b"resource_tracker" not in command:
                    found += family(int(child))
    except FileNotFoundError:
        pass
    return found


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += cpu_seconds(pid)
    return total


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
    rows: Any = None  # () -> int, the telemetry rows written so far
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
    pids = family(target.pid)
    idle = rss_kb(pids)
    command = [sys.executable, __file__, "--client", "--port", str(target.port)]
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
    rows = None
    if target.rows is not None:
        deadline = time.monotonic() + 30
        while True:  # the writer flushes in batches: wait for the last ones
            rows = target.rows() - rows_before
            if rows >= result["calls"] or time.monotonic() > deadline:
                break
            time.sleep(0.5)
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


def sqlite_rows(path: Path) -> Any:
    def count() -> int:
        with sqlite3.connect(path, timeout=30) as connection:
            return int(connection.execute("SELECT count(*) FROM telemetry").fetchone()[0])

    return count


def postgres_rows(url: str) -> Any:
    from sqlalchemy import create_engine, text

    sync = url.replace("+asyncpg", "+psycopg") if importlib.util.find_spec("psycopg") else None

    def count() -> int:
        if sync is not None:
            engine = create_engine(sync)
            with engine.connect() as connection:
                value = int(connection.execute(text("SELECT count(*) FROM telemetry")).scalar_one())
            engine.dispose()
            return value
        return asyncio.run(_async_count(url))

    return count


async def _async_count(url: str) -> int:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            answer = await connection.execute(text("SELECT count(*) FROM telemetry"))
            return int(answer.scalar_one())
    finally:
        await engine.dispose()


async def _server_ddl(server_url: str, statement: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


def gateway_config(
    args: argparse.Namespace, database_url: str, upstream: str, port: int, scratch: Path
) -> Path:
    text = bench_config(str(scratch / "unused.db"), upstream, port, workers=args.workers)
    text = text.replace(
        f'database: {{url: "sqlite+aiosqlite:///{scratch / "unused.db"}"}}',
        f'database: {{url: "{database_url}"}}',
    )
    connections = max(2048, args.streams + 64)
    text = text.replace("server: {", f"server: {{maxConnections: {connections}, ", 1)
    path = scratch / f"gateway-{port}.yaml"
    path.write_text(text)
    return path


def print_figures(args: argparse.Namespace, runs: list[Figures], skipped: list[str]) -> None:
    print(
        f"\nconditions: {args.streams} concurrent callers for {args.duration:g} s (ramp "
        f"{args.ramp:g} s), first event after {args.first_ms:g} ms, {args.rate:g} events/s, "
        f"{args.tokens_per_event} tokens an event, 300-1,000 tokens an answer, "
        f"{100 * args.whole_share:g} % whole answers of 1-5 s; gateway: {args.workers} "
        f"worker(s), telemetry, metrics and the access log on; {os.cpu_count()} cores, "
        f"load average before the run {args.load_before}"
    )
    direct = next((run for run in runs if run.name == "direct"), None)

    def added(run: Figures, values: str, share: float) -> str:
        mine = percentile(run.client[values], share)
        if direct is None or run is direct:
            return f"{mine:8.1f}"
        base = percentile(direct.client[values], share)
        return f"{mine:8.1f} ({mine - base:+7.1f})"

    print(
        "\n(ms; in brackets: added over the direct run)\n"
        f"{'target':22} {'held':>5} {'calls':>6} {'errors':>6}  {'TTFT p50':>18} {'TTFT p99':>18}"
        f"  {'delay p99':>18} {'gap p99':>18}  {'/healthz p50/p99':>16}"
    )
    for run in runs:
        c = run.client
        health = f"{percentile(run.health, 0.5):.1f}/{percentile(run.health, 0.99):.1f}"
        print(
            f"{run.name:22} {c['peak']:5d} {c['calls']:6d} {c['errors']:6d}  "
            f"{added(run, 'ttft', 0.5):>18} {added(run, 'ttft', 0.99):>18}  "
            f"{added(run, 'delays', 0.99):>18} {added(run, 'gaps', 0.99):>18}  {health:>16}"
        )
    print(
        f"\n{'target':22} {'RSS idle':>9} {'plateau':>9} {'per stream':>11} "
        f"{'events':>8} {'CPU/event':>10} {'CPU share':>9} {'rows/calls':>12} "
        f"{'client CPU':>10} {'upstream CPU':>12}"
    )
    for run in runs:
        c = run.client
        per = (run.rss_plateau_kb - run.rss_idle_kb) / c["peak"] if c["peak"] else float("nan")
        per_event = run.cpu / c["events"] * 1e6 if c["events"] else float("nan")
        rows = "—" if run.rows is None else f"{run.rows}/{c['calls']}"
        print(
            f"{run.name:22} {run.rss_idle_kb / 1024:7.0f}MB {run.rss_plateau_kb / 1024:7.0f}MB "
            f"{per:8.1f}KiB {c['events']:8d} {per_event:8.1f}µs {run.cpu / c['wall']:8.0%} "
            f"{rows:>12} {c['cpu'] / c['wall']:9.0%} {c['upstream_cpu'] / c['wall']:11.0%}"
        )
    for run in runs:
        c = run.client
        if c["errors"] or c["no_usage"] or run.health_failures:
            print(
                f"  {run.name}: errors {c['error_kinds']}, streams without usage "
                f"{c['no_usage']}, /healthz failures {run.health_failures}"
            )
    for line in skipped:
        print(line)
    print(
        "\ntargets (one gateway process, N = 2,000): 0 errors, 0 rows lost, added TTFT "
        "<= 5 ms p99, added gap <= 2 ms p99, <= 32 KiB per open stream, /healthz <= 50 ms p99"
    )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--duration", type=float, default=30, help="seconds callers call")
    parser.add_argument("--ramp", type=float, default=2, help="callers start over this")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--first-ms", type=float, default=300)
    parser.add_argument("--rate", type=float, default=25)
    parser.add_argument("--tokens-per-event", type=int, default=3)
    parser.add_argument("--whole-share", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=120, help="per call, seconds")
    parser.add_argument("--sample", type=float, default=0.2, help="share of events timed")
    parser.add_argument("--targets", default="direct,sqlite,postgres,floor,litellm,portkey")
    parser.add_argument("--postgres", default=os.environ.get("GATEWAY_TEST_POSTGRES_URL"))
    parser.add_argument(
        "--profile", type=float, default=0, help="py-spy the gateway this many seconds"
    )
    parser.add_argument("--gil", action="store_true", help="py-spy --gil (with --profile)")
    parser.add_argument("--client", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--path", default="/v1/chat/completions", help=argparse.SUPPRESS)
    parser.add_argument("--model", default="fixed", help=argparse.SUPPRESS)
    parser.add_argument("--header", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        with contextlib.suppress(ImportError):
            import uvloop

            uvloop.install()
        Path(args.out).write_text(json.dumps(asyncio.run(client_main(args))))
        return 0
    args.load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    wanted = args.targets.split(",")
    scratch = Path(tempfile.mkdtemp(prefix="gateway-streamload-"))
    up_port = free_port()
    upstream_url = f"http://127.0.0.1:{up_port}"
    env = {**os.environ}
    upstream = start(
        [
            sys.executable,
            str(ROOT / "bench" / "paced_upstream.py"),
            str(up_port),
            "--first-ms",
            str(args.first_ms),
            "--rate",
            str(args.rate),
            "--tokens-per-event",
            str(args.tokens_per_event),
        ]
    )
    runs: list[Figures] = []
    skipped: list[str] = []
    try:
        wait_port(up_port)
        for name in wanted:
            outcome = run_target(name, args, upstream_url, upstream.pid, scratch, env)
            if isinstance(outcome, str):
                skipped.append(outcome)
            elif outcome is not None:
                runs.append(outcome)
    finally:
        stop(upstream)
        shutil.rmtree(scratch, ignore_errors=True)
    print_figures(args, runs, skipped)
    return 0


SERVE = [sys.executable, "-m", "gateway.cli", "serve", "--config"]
AUTH = [f"authorization:Bearer {KEY}"]


def run_target(
    name: str,
    args: argparse.Namespace,
    upstream_url: str,
    upstream_pid: int,
    scratch: Path,
    env: dict[str, str],
) -> Figures | str | None:
    """One target's figures, or the line saying why it was skipped."""
    if name == "direct":
        port = int(upstream_url.rsplit(":", 1)[1])
        return run_load(args, Target("direct", port, upstream_pid), upstream_pid)
    if name == "sqlite":
        port = free_port()
        db = scratch / "telemetry.db"
        config = gateway_config(args, f"sqlite+aiosqlite:///{db}", upstream_url, port, scratch)
        process = start([*SERVE, str(config)], env)
        try:
            wait_port(port, 120)
            time.sleep(1 + args.workers)  # every worker has started
            target = Target("gateway, SQLite", port, process.pid, headers=AUTH)
            target.rows = sqlite_rows(db)
            return run_load(args, target, upstream_pid)
        finally:
            stop(process)
    if name == "postgres":
        if not args.postgres:
            return (
                "gateway, PostgreSQL: skipped (no --postgres URL, GATEWAY_TEST_POSTGRES_URL unset)"
            )
        return run_postgres(args, upstream_url, upstream_pid, scratch, env)
    if name == "floor":
        port = free_port()
        floor = [sys.executable, str(ROOT / "bench" / "floor.py"), str(port), upstream_url]
        process = start(floor)
        try:
            wait_port(port)
            return run_load(args, Target("floor", port, process.pid), upstream_pid)
        finally:
            stop(process)
    if name == "litellm":
        return run_litellm(args, upstream_url, upstream_pid, scratch)
    if name == "portkey":
        if shutil.which("portkey") is None:
            return "Portkey gateway: not installed (a Node program: npx @portkey-ai/gateway)"
        return "Portkey gateway: installed, but this benchmark does not drive it yet"
    return f"{name}: unknown target"


def run_postgres(
    args: argparse.Namespace,
    upstream_url: str,
    upstream_pid: int,
    scratch: Path,
    env: dict[str, str],
) -> Figures:
    from sqlalchemy.engine import make_url

    database = f"gwbench_{uuid.uuid4().hex[:10]}"
    asyncio.run(_server_ddl(args.postgres, f"CREATE DATABASE {database}"))
    url = make_url(args.postgres).set(database=database).render_as_string(hide_password=False)
    try:
        port = free_port()
        process = start([*SERVE, str(gateway_config(args, url, upstream_url, port, scratch))], env)
        try:
            wait_port(port, 120)
            time.sleep(1 + args.workers)
            target = Target("gateway, PostgreSQL", port, process.pid, headers=AUTH)
            target.rows = postgres_rows(url)
            return run_load(args, target, upstream_pid)
        finally:
            stop(process)
    finally:
        asyncio.run(_server_ddl(args.postgres, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"))


def run_litellm(
    args: argparse.Namespace, upstream_url: str, upstream_pid: int, scratch: Path
) -> Figures | str:
    command = shutil.which("litellm")
    if command is None:
        return "LiteLLM proxy: not installed (pip install 'litellm[proxy]')"
    config = scratch / "litellm.yaml"
    config.write_text(
        "model_list:\n  - model_name: fixed\n    litellm_params:\n"
        f"      model: openai/bench-model\n      api_base: {upstream_url}/v1\n"
        "      api_key: sk-upstream\n"
    )
    port = free_port()
    litellm = [command, "--config", str(config), "--port", str(port)]
    process = start([*litellm, "--num_workers", str(args.workers)])
    try:
        wait_port(port, 180)
        time.sleep(2)
        target = Target("LiteLLM proxy", port, process.pid, health="/health/liveliness")
        return run_load(args, target, upstream_pid)
    finally:
        stop(process)


if __name__ == "__main__":
    raise SystemExit(main())
