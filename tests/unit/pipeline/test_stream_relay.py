"""The stream relay keeps no text: its memory does not grow with the answer, and its
estimate of an answer without reported usage is the count of the whole answer."""

from __future__ import annotations

import json
import random
import time
import tracemalloc
from collections.abc import AsyncIterator, Iterator

import msgspec
import pytest

from gateway.domain.model import (
    AdapterType,
    Configuration,
    ConfigurationMode,
    Endpoint,
    Model,
    Provider,
)
from gateway.inbound import parse_inbound
from gateway.pipeline.context import CallContext, Target
from gateway.pipeline.stream import StreamRelay
from gateway.pipeline.stream_open import OpenedStream, counting_tracker
from gateway.streaming.sse import SSEDecoder
from gateway.usage.tokens import TiktokenCounter

WORDS = ["the", "gateway", "relays", "every", "event", "of", "a", "long", "answer", "and"]
SIZE = 3 * 1024 * 1024  # characters of generated text


def _deltas(seed: int) -> Iterator[str]:
    """Content deltas of a few dozen words each, made on the fly (nothing kept)."""
    rng = random.Random(seed)
    made = 0
    while made < SIZE:
        delta = "".join(" " + rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
        made += len(delta)
        yield delta


def _event(delta: dict[str, object], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return f"data: {json.dumps({'model': 'gpt-4o', 'choices': [choice]})}\n\n".encode()


async def _upstream() -> AsyncIterator[bytes]:
    for delta in _deltas(7):
        yield _event({"content": delta})
    yield _event({}, finish="stop")
    yield b"data: [DONE]\n\n"  # no usage reported: the relay estimates


def _relay(counter: TiktokenCounter, finished: list[CallContext]) -> StreamRelay:
    body = {"model": "chat", "stream": True, "messages": [{"role": "user", "content": "Go on."}]}
    request = parse_inbound(Endpoint.CHAT, msgspec.json.encode(body))
    ctx = CallContext(request, None, "stream-1", time.monotonic() + 60)
    model = Model(id="m", provider="p", name="gpt-4o")
    provider = Provider(id="p", adapter=AdapterType.OPENAI, base_url="http://127.0.0.1:9/v1")
    target = Target(
        Configuration(id="chat", mode=ConfigurationMode.FIXED, model="m"), model, provider, None
    )

    async def finish(ended: CallContext) -> None:
        finished.append(ended)

    opened = OpenedStream(_upstream(), SSEDecoder(1 << 20), counting_tracker(counter, "gpt-4o"), [])
    return StreamRelay(ctx, target, opened, counter, finish)


@pytest.mark.usefixtures("tiktoken_encodings")
async def test_a_multi_megabyte_stream_is_estimated_without_keeping_its_text() -> None:
    counter = TiktokenCounter(["o200k_base"])
    counter.warm()
    finished: list[CallContext] = []
    relay = _relay(counter, finished)
    peak = {"held": 0}  # the most traced memory seen between two events (no list: it grows)

    async def emit(data: bytes) -> None:
        peak["held"] = max(peak["held"], tracemalloc.get_traced_memory()[0])

    tracemalloc.start()
    try:
        baseline = tracemalloc.get_traced_memory()[0]
        await relay.run(emit)
    finally:
        tracemalloc.stop()
    assert peak["held"] - baseline < 256 * 1024  # while 3 MiB of answer went by
    (ended,) = finished
    record = ended.record
    assert record.success and record.usage_source == "estimated"
    whole = "".join(_deltas(7))
    assert record.estimated_output_tokens == counter.count_text(whole, "gpt-4o")


async def test_the_events_of_one_upstream_read_go_out_in_one_write() -> None:
    reads = [
        _event({"content": "a"}) + _event({"content": "b"}) + _event({"content": "c"}),
        _event({}, finish="stop") + b"data: [DONE]\n\n",
    ]

    async def upstream() -> AsyncIterator[bytes]:
        for read in reads:
            yield read

    finished: list[CallContext] = []
    relay = _relay(TiktokenCounter([]), finished)
    relay._chunks = upstream()
    writes: list[bytes] = []

    async def emit(data: bytes) -> None:
        writes.append(data)

    await relay.run(emit)
    assert writes == reads  # byte-identical, one write per read
    assert finished[0].record.success
