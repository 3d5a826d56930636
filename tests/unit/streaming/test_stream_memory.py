"""A stream's tracker keeps no text: its memory does not grow with the answer."""

from __future__ import annotations

import json
import random
import tracemalloc
from collections.abc import Iterator

import pytest

from gateway.streaming.openai_stream import StreamUsageTracker
from gateway.usage.tally import TokenTally
from gateway.usage.tokens import TiktokenCounter

WORDS = [
    "the",
    "gateway",
    "relays",
    "every",
    "event",
    "of",
    "a",
    "long",
    "answer",
    "and",
    "counts",
    "its",
    "tokens",
    "as",
    "it",
    "goes",
]


def _deltas(seed: int, total_chars: int) -> Iterator[str]:
    """Stream-like content deltas of a few dozen words each, made on the fly (nothing kept)."""
    rng = random.Random(seed)
    made = 0
    while made < total_chars:
        delta = "".join(" " + rng.choice(WORDS) for _ in range(rng.randint(20, 60)))
        made += len(delta)
        yield delta


def _event(delta: str) -> str:
    return json.dumps({"model": "m", "choices": [{"index": 0, "delta": {"content": delta}}]})


@pytest.mark.usefixtures("shared_encodings")
def test_a_multi_megabyte_stream_is_counted_without_keeping_its_text() -> None:
    counter = TiktokenCounter()
    counter.warm()
    size = 2 * 1024 * 1024
    tracemalloc.start()
    try:
        tracker = StreamUsageTracker(
            TokenTally(lambda text: counter.count_text(text, "gpt-4o"), inline_chars=16_384)
        )
        baseline, _ = tracemalloc.get_traced_memory()
        for delta in _deltas(1, size):
            tracker.observe(_event(delta))
            assert tracker.tally.backlog_chars <= 16_384
        retained, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert retained - baseline < 128 * 1024  # a 2 MiB answer went by
    whole = "".join(_deltas(1, size))
    assert tracker.estimate_output_tokens().tokens == counter.count_text(whole, "gpt-4o")
