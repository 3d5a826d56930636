"""An OpenAI-compatible upstream that paces its answers like a real model.

A stream's first event goes out ``--first-ms`` after the request, then one event every
``1 / --rate`` seconds, each carrying ``--tokens-per-event`` words of text, until the
answer's tokens are out (the request's ``max_tokens``, else 300-1,000 at random); then a
finish chunk, the usage chunk when ``stream_options.include_usage`` asks for it (as
OpenAI does) and ``[DONE]``. A whole answer (no ``stream``) comes after 1-5 s at random.
Every stream event carries the moment it was written (``time.monotonic()``, the same
clock in every process of the machine) as its ``system_fingerprint`` (``t<seconds>``),
so a client can tell how long each event took to reach it. ``GET /healthz`` answers at
once. One process, one event loop: all streams are written by one ticker (every 5 ms,
the events due then), so thousands of streams cost one timer, not one each.

    python bench/paced_upstream.py PORT [--first-ms 300] [--rate 25] [--tokens-per-event 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import time
from collections import defaultdict
from typing import Any

TICK = 0.005
WORD = b" lorem"  # one token in both tiktoken encodings
# A stream's events cycle through these (each one token in both encodings too): text that
# repeats one chunk over and over is not what a model sends, and LiteLLM's proxy ends
# such a stream with an error after 100 repeats (REPEATED_STREAMING_CHUNK_LIMIT).
WORDS = (b" lorem", b" the", b" of", b" and", b" to", b" in", b" is", b" it", b" that")

_HEAD_STREAM = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)
_HEALTH = b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: 2\r\n\r\nok"


def _chunk(payload: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(payload), payload)


def _words(n: int, first: int) -> bytes:
    """``n`` words of WORDS from the ``first``-th on, round the cycle."""
    return b"".join(WORDS[(first + i) % len(WORDS)] for i in range(n))


def _event(prefix: bytes, body: bytes) -> bytes:
    stamp = b'"system_fingerprint":"t%.6f",' % time.monotonic()
    return b"data: " + prefix + stamp + body + b"}\n\n"


class Stream:
    __slots__ = (
        "at",
        "first",
        "include_usage",
        "left",
        "per_event",
        "prompt",
        "tokens",
        "transport",
    )

    def __init__(self, transport: Any, tokens: int, per_event: int, include_usage: bool) -> None:
        self.transport = transport
        self.tokens = tokens
        self.left = tokens
        self.per_event = per_event
        self.include_usage = include_usage
        self.first = True
        self.prompt = 12
        self.at = 0.0  # when its next event is due


class Pacer:
    """Writes every stream's events when they are due: one timer for all streams."""

    def __init__(self, first: float, rate: float, per_event: int) -> None:
        self.first = first
        self.period = 1 / rate
        self.per_event = per_event
        self.due: defaultdict[int, list[Stream]] = defaultdict(list)
        self.events = 0
        self._origin = time.monotonic()
        self._prefix = (
            b'{"id":"chatcmpl-paced","object":"chat.completion.chunk","created":1700000000,'
            b'"model":"bench-model",'
        )
        self._text = {
            (n, first): json.dumps(_words(n, first).decode()).encode()
            for n in range(1, 65)
            for first in range(len(WORDS))
        }

    def _slot(self, at: float) -> int:
        return math.ceil((at - self._origin) / TICK)

    def add(self, stream: Stream) -> None:
        stream.at = time.monotonic() + self.first
        self.due[self._slot(stream.at)].append(stream)

    async def run(self) -> None:
        slot = self._slot(time.monotonic())
        while True:
            now = time.monotonic()
            target = self._origin + slot * TICK
            if target > now:
                await asyncio.sleep(target - now)
            streams = self.due.pop(slot, None)
            slot += 1
            if not streams:
                continue
            for stream in streams:
                if stream.transport.is_closing():
                    continue
                if self._write(stream):
                    stream.at += self.period  # its own pace, whatever the tick's rounding
                    self.due[max(self._slot(stream.at), slot)].append(stream)  # slot: the next

    def _write(self, stream: Stream) -> bool:
        """The stream's next event; False when that was its last."""
        self.events += 1
        n = min(stream.per_event, stream.left)
        stream.left -= n
        role = b'"role":"assistant",' if stream.first else b""
        stream.first = False
        body = (
            b'"choices":[{"index":0,"delta":{'
            + role
            + b'"content":'
            + self._text[n, stream.left % len(WORDS)]
            + b'},"finish_reason":null}]'
        )
        out = [_chunk(_event(self._prefix, body))]
        if stream.left <= 0:
            finish = b'"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]'
            out.append(_chunk(_event(self._prefix, finish)))
            if stream.include_usage:
                usage = (
                    b'"choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,'
                    b'"total_tokens":%d}'
                    % (stream.prompt, stream.tokens, stream.prompt + stream.tokens)
                )
                out.append(_chunk(_event(self._prefix, usage)))
            out.append(_chunk(b"data: [DONE]\n\n"))
            out.append(b"0\r\n\r\n")
        stream.transport.write(b"".join(out))
        return stream.left > 0


def _whole(tokens: int) -> bytes:
    answer = json.dumps(
        {
            "id": "chatcmpl-paced",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "bench-model",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": (WORD * tokens).decode()},
                    "finish_reason": "stop",
                }
            ],
            "usage": {
                "prompt_tokens": 12,
                "completion_tokens": tokens,
                "total_tokens": 12 + tokens,
            },
        }
    ).encode()
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return head % len(answer) + answer


class Upstream(asyncio.Protocol):
    pacer: Pacer
    whole_seconds: tuple[float, float] = (1.0, 5.0)

    def __init__(self) -> None:
        self.buffer = b""
        self.transport: Any = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

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
            if head.startswith(b"get"):
                self.transport.write(_HEALTH)
            else:
                self._answer(body)

    def _answer(self, body: bytes) -> None:
        request = json.loads(body) if body else {}
        tokens = request.get("max_tokens") or random.randint(300, 1000)
        if not request.get("stream"):
            delay = random.uniform(*self.whole_seconds)
            asyncio.get_running_loop().call_later(delay, self._write_whole, tokens)
            return
        include = bool((request.get("stream_options") or {}).get("include_usage"))
        self.transport.write(_HEAD_STREAM)
        self.pacer.add(Stream(self.transport, tokens, self.pacer.per_event, include))

    def _write_whole(self, tokens: int) -> None:
        if not self.transport.is_closing():
            self.transport.write(_whole(tokens))


async def main(args: argparse.Namespace) -> None:
    pacer = Pacer(args.first_ms / 1000, args.rate, args.tokens_per_event)
    Upstream.pacer = pacer
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Upstream, "127.0.0.1", args.port, backlog=4096)
    async with server:
        await asyncio.gather(server.serve_forever(), pacer.run())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--first-ms", type=float, default=300)
    parser.add_argument("--rate", type=float, default=25, help="events a second")
    parser.add_argument("--tokens-per-event", type=int, default=3)
    try:
        import uvloop

        uvloop.install()
    except ImportError:
        pass
    asyncio.run(main(parser.parse_args()))
