"""Opening a stream: its first blocks are read and checked before anything is sent."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from gateway.domain.errors import UpstreamError
from gateway.domain.usage import TokenCount
from gateway.pipeline.stream_open import counting_tracker, open_checked
from gateway.streaming.sse import EventTooLarge
from gateway.usage.tokens import CharEstimateCounter

EVENT = b'data: {"choices": [{"delta": {"content": "hi"}}]}\n\n'


class Chunks:
    """An upstream stream that yields the given chunks, or raises one of them."""

    def __init__(self, *chunks: bytes | Exception) -> None:
        self._chunks = list(chunks)
        self.read = 0
        self.closed = False

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self

    async def __anext__(self) -> bytes:
        if not self._chunks:
            raise StopAsyncIteration
        self.read += 1
        chunk = self._chunks.pop(0)
        if isinstance(chunk, Exception):
            raise chunk
        return chunk

    async def aclose(self) -> None:
        self.closed = True


class _Chars(CharEstimateCounter):
    """One token per character: what was counted shows in the total."""

    def count_text(self, text: str, model_name: str) -> int:
        return len(text)


async def test_reads_until_a_block_is_complete_and_hands_it_over_observed() -> None:
    chunks = Chunks(EVENT[:10], EVENT[10:] + b"data: [DONE]", b"\n\n")
    opened = await open_checked(chunks, counting_tracker(_Chars(), "m"))
    assert chunks.read == 2 and not chunks.closed
    ((raw, seen),) = opened.held
    assert raw.raw == EVENT and seen is not None and seen.has_content
    assert opened.tracker.estimate_output_tokens() == TokenCount(2)  # "hi", by its counter
    # The rest of what was read stays in the decoder, for the relay.
    assert [r.raw for r in opened.decoder.feed_raw(b"\n\n")] == [b"data: [DONE]\n\n"]


async def test_a_keep_alive_comment_is_a_block_the_stream_has_begun() -> None:
    opened = await open_checked(Chunks(b": keep-alive\n\n", b"data: <html>\n\n"))
    ((raw, seen),) = opened.held
    assert raw.raw == b": keep-alive\n\n" and seen is None


@pytest.mark.parametrize(
    "first", [b"data: <html>\n\n", b"event: x\ndata: 42\n\ndata: {}\n\n", b"data: [\n\n"]
)
async def test_a_first_event_that_is_not_json_is_retryable(first: bytes) -> None:
    chunks = Chunks(first)
    with pytest.raises(UpstreamError) as caught:
        await open_checked(chunks)
    assert caught.value.kind == "invalid_response" and caught.value.retryable
    assert chunks.closed


async def test_only_the_first_block_decides_however_the_bytes_are_chunked() -> None:
    opened = await open_checked(Chunks(EVENT + b"data: not json\n\n"))
    assert [seen is not None and seen.invalid for _, seen in opened.held] == [False, True]


async def test_a_stream_ending_without_a_complete_block_is_retryable() -> None:
    chunks = Chunks(b"<html>not a stream</html>")
    with pytest.raises(UpstreamError) as caught:
        await open_checked(chunks)
    assert caught.value.kind == "invalid_response" and caught.value.retryable
    assert chunks.closed


async def test_a_cut_before_the_first_block_becomes_retryable() -> None:
    chunks = Chunks(b"data: {", UpstreamError("stream_cut", "broke"))
    with pytest.raises(UpstreamError) as caught:
        await open_checked(chunks)
    assert caught.value.kind == "stream_cut" and caught.value.retryable
    assert chunks.closed


async def test_a_first_event_past_the_cap_is_oversize_and_retryable_before_any_byte() -> None:
    head = b'data: {"pad": "'
    chunks = Chunks(head + b"x" * 600, b"x" * 600, b'"}\n\n')
    with pytest.raises(UpstreamError) as caught:
        await open_checked(chunks, max_event_bytes=1_000)
    assert caught.value.kind == "oversize" and caught.value.retryable
    assert "1000 bytes" in caught.value.message
    assert chunks.read == 2 and chunks.closed  # read no further than the cap


async def test_the_capped_decoder_is_handed_over_for_the_rest_of_the_stream() -> None:
    opened = await open_checked(Chunks(EVENT), max_event_bytes=1_000)
    assert opened.decoder.feed_raw(EVENT) != []
    with pytest.raises(EventTooLarge):
        opened.decoder.feed_raw(b"data: " + b"y" * 2_000)
