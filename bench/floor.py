"""The floor: the least a Python proxy of an OpenAI call can do, on the gateway's stack.

A raw ASGI app on uvicorn (uvloop, httptools) with one pooled aiohttp client: it
reads the body, parses it, swaps ``model``, forwards it, parses the answer, adds a
field and answers; a stream is relayed chunk by chunk. No auth, no routing, no
telemetry. ``bench/overhead.py`` starts it and prints the gateway's share of its
req/s. Usage: ``python bench/floor.py PORT UPSTREAM_URL``.
"""

from __future__ import annotations

import sys
from typing import Any

import aiohttp
import msgspec
import uvicorn

UPSTREAM = sys.argv[2] if len(sys.argv) > 2 else "http://127.0.0.1:9"
JSON = [(b"content-type", b"application/json")]
UPSTREAM_HEADERS = {"content-type": "application/json"}
SSE = [(b"content-type", b"text/event-stream")]
session: aiohttp.ClientSession | None = None


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    global session
    if scope["type"] == "lifespan":
        await receive()  # lifespan.startup
        # No cap on the pool: bench/stream_load.py holds thousands of streams at once.
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        await send({"type": "lifespan.startup.complete"})
        await receive()  # lifespan.shutdown
        await session.close()
        await send({"type": "lifespan.shutdown.complete"})
        return
    if scope["path"] == "/healthz":  # bench/stream_load.py probes it during its load
        await send({"type": "http.response.start", "status": 200, "headers": JSON})
        await send({"type": "http.response.body", "body": b'{"status":"ok"}'})
        return
    body, more = b"", True
    while more:
        message = await receive()
        body, more = body + message.get("body", b""), message.get("more_body", False)
    payload = msgspec.json.decode(body)
    payload["model"] = "bench-model"
    assert session is not None
    url = UPSTREAM + "/v1/chat/completions"
    async with session.post(
        url, data=msgspec.json.encode(payload), headers=UPSTREAM_HEADERS
    ) as answer:
        if payload.get("stream"):
            await send({"type": "http.response.start", "status": answer.status, "headers": SSE})
            async for chunk in answer.content.iter_any():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
            return
        result = msgspec.json.decode(await answer.read())
    result["x_floor"] = True
    out = msgspec.json.encode(result)
    headers = [*JSON, (b"content-length", str(len(out)).encode())]
    await send({"type": "http.response.start", "status": answer.status, "headers": headers})
    await send({"type": "http.response.body", "body": out})


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), access_log=False, log_level="error")
