"""The load client of bench/stream_load.py, run in its own process.

Opens ``--streams`` keep-alive connections (raw asyncio, one per caller, started over
``--ramp`` seconds); each caller calls ``--path`` again until ``--duration`` is over,
a share ``--whole-share`` of its calls whole answers and the rest streams asking for
usage. Every event the paced upstream writes carries the moment it was written (its
``system_fingerprint``), so each event's delay is known. Writes what it saw as JSON to
``--out``: calls, errors by kind, events, time to first event, sampled delays and gaps,
the streams held at once and their timeline, and its own wall and CPU time.

    python bench/stream_client.py --port P --out FILE [--streams 2000] [--duration 30]
        [--path /v1/chat/completions] [--model fixed] [--header 'name:value' ...]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MARK = b'"system_fingerprint":"t'
PROMPT = [{"role": "user", "content": "Write a long answer."}]


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
                self._event(block, now)
                if random.random() < self.sample:
                    start = at + len(MARK)
                    stamp = float(block[start : block.index(b'"', start)])
                    results.delays.append((now - stamp) * 1000)
            elif b"[DONE]" in block:
                self.saw_done = True
            elif b'"error"' in block:
                self.saw_error = True
            elif block.startswith(b"data:") and b'"choices"' in block:
                self._event(block, now)  # a peer that re-encodes the chunks, stamp dropped

    def _event(self, block: bytes, now: float) -> None:
        results = self.results
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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--out", required=True, help="the JSON of what was seen")
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--duration", type=float, default=30, help="seconds callers call")
    parser.add_argument("--ramp", type=float, default=2, help="callers start over this")
    parser.add_argument("--whole-share", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=120, help="per call, seconds")
    parser.add_argument("--sample", type=float, default=0.2, help="share of events timed")
    parser.add_argument("--path", default="/v1/chat/completions")
    parser.add_argument("--model", default="fixed")
    parser.add_argument("--header", action="append", default=[], help="name:value")
    args = parser.parse_args()
    with contextlib.suppress(ImportError):
        import uvloop

        uvloop.install()
    Path(args.out).write_text(json.dumps(asyncio.run(client_main(args))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
