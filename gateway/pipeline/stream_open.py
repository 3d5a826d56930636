"""Opening a stream: read its first block before anything goes to the client.

The first block is decoded and checked while the call can still fall back: an
event a client could not read (data that is not JSON), or a stream that ends
without a single complete block, is then a retryable failure rather than a broken
answer. Only the first block decides, however the bytes happen to be chunked: a
keep-alive comment first means the stream has begun. The decoder, the tracker and
the blocks read so far (all observed, none sent) are handed to the relay, so no
event is decoded twice.

The decoder holds at most ``max_event_bytes`` of one event (``server.
maxUpstreamEventBytes``), here and in the relay it is handed to: a first event
larger than that fails the attempt while nothing has reached the client (kind
``oversize``: a fallback may answer, the same provider is not asked again).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import Endpoint
from gateway.streaming.messages_stream import MessagesStreamTracker
from gateway.streaming.openai_stream import Observation, StreamUsageTracker
from gateway.streaming.responses_stream import ResponsesStreamTracker
from gateway.streaming.sse import EventTooLarge, RawEvent, SSEDecoder
from gateway.usage.tally import TokenTally
from gateway.usage.tokens import TextCounter

Held = list[tuple[RawEvent, Observation | None]]  # None: a block that dispatches nothing


@dataclass(slots=True)
class OpenedStream:
    chunks: AsyncIterator[bytes]
    decoder: SSEDecoder
    tracker: StreamUsageTracker
    held: Held  # decoded and observed, not yet sent


def counting_tracker(
    counter: TextCounter, model_name: str, endpoint: Endpoint = Endpoint.CHAT
) -> StreamUsageTracker:
    """A tracker whose tally counts the generated text with ``model_name``'s encoding; for
    ``/v1/responses`` one that reads the Responses API's typed events, for ``/v1/messages``
    Anthropic's."""
    tally = TokenTally(lambda text: counter.count_text(text, model_name))
    if endpoint is Endpoint.RESPONSES:
        return ResponsesStreamTracker(tally)
    if endpoint is Endpoint.MESSAGES:
        return MessagesStreamTracker(tally)
    return StreamUsageTracker(tally)


async def open_checked(
    chunks: AsyncIterator[bytes],
    tracker: StreamUsageTracker | None = None,
    max_event_bytes: int | None = None,
) -> OpenedStream:
    """Read until at least one block is complete; raise a retryable UpstreamError if the
    first is an unusable or oversize event or no block came at all. The stream is closed
    on failure. ``tracker`` observes every block read (a characters/4 one when None)."""
    decoder = SSEDecoder(max_event_bytes)
    tracker = tracker or StreamUsageTracker()
    held: Held = []
    try:
        async for chunk in chunks:
            for raw in _feed(decoder, chunk):
                event = raw.event
                seen = None if event is None else tracker.observe(event.data, event.event)
                held.append((raw, seen))
            if held:
                first = held[0][1]
                if first is not None and first.invalid:
                    raise UpstreamError(
                        FailureKind.INVALID_RESPONSE,
                        "upstream sent an event that is not a JSON object",
                    )
                return OpenedStream(chunks, decoder, tracker, held)
        raise UpstreamError(
            FailureKind.INVALID_RESPONSE, "upstream stream ended without a complete event"
        )
    except UpstreamError as error:
        await close_stream(chunks)
        # Nothing reached the client yet: another attempt may still answer.
        raise UpstreamError(error.kind, error.message, retryable=True) from error
    except BaseException:
        await close_stream(chunks)
        raise


def _feed(decoder: SSEDecoder, chunk: bytes) -> list[RawEvent]:
    try:
        return decoder.feed_raw(chunk)
    except EventTooLarge as error:
        message = f"the upstream's first stream event exceeds {error.limit} bytes"
        raise UpstreamError(FailureKind.OVERSIZE, message) from error


async def close_stream(chunks: AsyncIterator[bytes]) -> None:
    aclose = getattr(chunks, "aclose", None)
    if aclose is None:
        return
    # Closing a broken upstream must not mask the call's outcome.
    with contextlib.suppress(Exception):
        await aclose()
