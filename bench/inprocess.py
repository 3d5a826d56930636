"""The gateway's own CPU cost per call, without sockets: the ASGI app driven in-process.

The upstream is an ``httpx.MockTransport`` answering a fixed completion, so the
figure is what the gateway adds (parsing, routing, pricing, telemetry enqueue,
metrics, response), free of network and load-generator noise. Prints the CPU time
(process time, steadier than the clock on a shared machine) per call for a fixed-mode
call, a criteria-mode call with callHistory, a stream, and a paced stream (200 events,
one a read, as a model sends them; and what each of its events costs beyond the short
stream's), and the top functions of a profile with ``--profile``.

    python bench/inprocess.py [--calls 5000] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

from gateway.api.app import create_app
from gateway.config.loader import load_config_text
from gateway.db.migrate import upgrade

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_config import KEY, bench_config

ANSWER = {
    "id": "c",
    "object": "chat.completion",
    "created": 1,
    "model": "bench-model",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
}
STREAM = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],'
    b'"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\n\n'
    b"data: [DONE]\n\n"
)


# A paced model's stream reaches the gateway one event a read: PACED_EVENTS content events
# (plus a finish, a usage chunk and [DONE]), each its own chunk of the body.
PACED_EVENTS = 200
_PACED_EVENT = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m",'
    b'"system_fingerprint":"t1.0","choices":[{"index":0,"delta":{"content":" lorem lorem'
    b' lorem"},"finish_reason":null}]}\n\n'
)
_STREAM_TAIL = STREAM.split(b"\n\n", 1)[1]


class _Paced(httpx.AsyncByteStream):
    async def __aiter__(self) -> Any:
        for _ in range(PACED_EVENTS):
            yield _PACED_EVENT
        for block in _STREAM_TAIL.split(b"\n\n")[:-1]:
            yield block + b"\n\n"


def upstream(request: httpx.Request) -> httpx.Response:
    if b'"user":"paced"' in request.content:
        headers = {"content-type": "text/event-stream"}
        return httpx.Response(200, stream=_Paced(), headers=headers)
    if b'"stream":true' in request.content:
        return httpx.Response(200, content=STREAM, headers={"content-type": "text/event-stream"})
    return httpx.Response(200, json=ANSWER)


async def call(app: Any, body: bytes) -> int:
    messages = [{"type": "http.request", "body": body, "more_body": False}]
    status = 0

    async def receive() -> dict[str, Any]:
        if messages:
            return messages.pop()
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/chat/completions",
        "raw_path": b"/v1/chat/completions",
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 4000),
        "headers": [
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
    }
    await app(scope, receive, send)
    return status


async def run(calls: int, profile: bool) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="gateway-inprocess-"))
    config = load_config_text(bench_config(str(tmp / "b.db"), "http://upstream.invalid"))
    upgrade(config.database.url)
    app = create_app(config, transport=httpx.MockTransport(upstream))
    message = {"role": "user", "content": "Say ok."}
    bodies = {
        "fixed": json.dumps({"model": "fixed", "messages": [message]}).encode(),
        "criteria + callHistory": json.dumps({"model": "routed", "messages": [message]}).encode(),
        "fixed, stream": json.dumps(
            {"model": "fixed", "messages": [message], "stream": True}
        ).encode(),
        "fixed, paced stream": json.dumps(
            {"model": "fixed", "messages": [message], "stream": True, "user": "paced"}
        ).encode(),
    }
    per_call: dict[str, float] = {}
    startup = asyncio.Event()
    shutdown = asyncio.Event()
    task = asyncio.create_task(_lifespan(app, startup, shutdown))
    await startup.wait()
    profiler = cProfile.Profile() if profile else None
    print(
        "conditions: in-process ASGI calls, MockTransport upstream, telemetry on (SQLite), "
        f"{calls} calls each"
    )
    for name, body in bodies.items():
        for _ in range(200):
            status = await call(app, body)
            assert status == 200, (name, status)
        if profiler:
            profiler.enable()
        count = calls // 20 if "paced" in name else calls
        start = time.process_time()
        for _ in range(count):
            await call(app, body)
        elapsed = time.process_time() - start
        if profiler:
            profiler.disable()
        per_call[name] = elapsed / count * 1e6
        print(f"  {name:24} {per_call[name]:8.1f} µs per call ({count} calls)")
    extra = per_call["fixed, paced stream"] - per_call["fixed, stream"]
    print(f"  a paced stream's event, one a read: {extra / (PACED_EVENTS - 1):.2f} µs")
    shutdown.set()
    await task
    if profiler:
        pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


async def _lifespan(app: Any, startup: asyncio.Event, shutdown: asyncio.Event) -> None:
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "lifespan.startup"}
        await shutdown.wait()
        return {"type": "lifespan.shutdown"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "lifespan.startup.complete":
            startup.set()

    await app({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.profile))


if __name__ == "__main__":
    main()
