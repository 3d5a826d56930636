"""Opening a stream: read its first block before anything goes to the client.

The first block is decoded and checked while the call can still fall back: an
event a client could not read (data that is not JSON), or a stream that ends
without a single complete block, is then a retryable failure rather than a broken
answer. Only the first block decides, however the bytes happen to be chunked: a
keep-alive comment first means the stream has begun. The decoder, the tracker and
the blocks read so far (all observed, none sent) are handed to the relay, so no
event is decoded twice.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from gateway.streaming.openai_stream import Observation, StreamUsageTracker
from gateway.streaming.sse import RawEvent, SSEDecoder
from gateway.upstream.base import UpstreamError

Held = list[tuple[RawEvent, Observation | None]]  # None: a block that dispatches nothing


@dataclass(slots=True)
class OpenedStream:
    chunks: AsyncIterator[bytes]
    decoder: SSEDecoder
    tracker: StreamUsageTracker
    held: Held  # decoded and observed, not yet sent


async def open_checked(chunks: AsyncIterator[bytes]) -> OpenedStream:
    """Read until at least one block is complete; raise a retryable UpstreamError if the
    first is an unusable event or no block came at all. The stream is closed on failure."""
    decoder = SSEDecoder()
    tracker = StreamUsageTracker()
    held: Held = []
    try:
        async for chunk in chunks:
            for raw in decoder.feed_raw(chunk):
                event = raw.event
                seen = None if event is None else tracker.observe(event.data, event.event)
                held.append((raw, seen))
            if held:
                first = held[0][1]
                if first is not None and first.invalid:
                    raise UpstreamError(
                        "invalid_response", "upstream sent an event that is not a JSON object"
                    )
                return OpenedStream(chunks, decoder, tracker, held)
        raise UpstreamError("invalid_response", "upstream stream ended without a complete event")
    except UpstreamError as error:
        await close_stream(chunks)
        # Nothing reached the client yet: another attempt may still answer.
        raise UpstreamError(error.kind, error.message, retryable=True) from error
    except BaseException:
        await close_stream(chunks)
        raise


async def close_stream(chunks: AsyncIterator[bytes]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is None:
        return
    # Closing a broken upstream must not mask the call's outcome.
    with contextlib.suppress(Exception):
        await aclose()
