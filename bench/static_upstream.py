"""A minimal keep-alive HTTP/1.1 server answering a fixed chat completion (~tens of µs).

It stands in for nginx: the upstream must never be the bottleneck of an overhead
benchmark. Usage: ``python bench/static_upstream.py PORT``.
"""

from __future__ import annotations

import asyncio
import json
import sys

ANSWER = json.dumps(
    {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1700000000,
        "model": "bench-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15},
    }
).encode()
STREAM = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"bench-model",'
    b'"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"bench-model",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"bench-model",'
    b'"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\n\n'
    b"data: [DONE]\n\n"
)
_EVENT = (
    b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"bench-model",'
    b'"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":null}]}\n\n'
)
# A stream of 200 content events, answered when the request names the user "long-stream"
# (bench/overhead.py measures the CPU each relayed event costs with it).
LONG_STREAM = _EVENT * 200 + STREAM[len(_EVENT) :]
WHOLE = (
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
    + str(len(ANSWER)).encode()
    + b"\r\n\r\n"
    + ANSWER
)
STREAMED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
    + str(len(STREAM)).encode()
    + b"\r\n\r\n"
    + STREAM
)
LONG_STREAMED = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: "
    + str(len(LONG_STREAM)).encode()
    + b"\r\n\r\n"
    + LONG_STREAM
)


class Upstream(asyncio.Protocol):
    def __init__(self) -> None:
        self.buffer = b""
        self.transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # uvloop's transports are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].lower()
            length = 0
            for line in head.split(b"\r\n"):
                if line.startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            total = head_end + 4 + length
            if len(self.buffer) < total:
                return
            body = self.buffer[head_end + 4 : total]
            self.buffer = self.buffer[total:]
            self.transport.write(_answer(body))  # type: ignore[union-attr]


def _answer(body: bytes) -> bytes:
    compact = body.replace(b" ", b"")
    if b'"stream":true' not in compact:
        return WHOLE
    return LONG_STREAMED if b'"user":"long-stream"' in compact else STREAMED


async def main(port: int) -> None:
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Upstream, "127.0.0.1", port, backlog=1024)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(int(sys.argv[1])))
