"""A Chat Completions stream read for a bridge that answers in another API's events
(responses_bridge: the Responses API; messages_bridge: the Messages API).

``translated_events`` reads the chat SSE and yields the other API's encoded events, one
write per upstream read; the bridge's ``step`` turns one chat event into its own events.
``chat_chunk`` decodes an event, and ``failed_at_once`` makes a stream that fails before
any byte went out an attempt's failure, so another attempt may answer. Nothing is sent
before the first chat event is read whole.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any, Protocol

import msgspec

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind
from gateway.streaming.sse import EventTooLarge, SSEDecoder, encode_event
from gateway.upstream.error_body import redact_json

Event = dict[str, Any]
# One chat event (its SSE name and data) → the bridge's events appended to the list;
# True when the stream ends there.
Step = Callable[[str | None, str, list[Event]], bool]

_ENCODER = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()


class Writer(Protocol):
    finish_reason: str | None

    def finish(self) -> list[Event]: ...


async def translated_events(
    chunks: AsyncIterator[bytes], writer: Writer, max_event_bytes: int, step: Step
) -> AsyncGenerator[bytes, None]:
    decoder = SSEDecoder(max_event_bytes)
    try:
        async for chunk in chunks:
            out: list[Event] = []
            for event in decoder.feed(chunk):
                if step(event.event, event.data, out):
                    yield encode(out)
                    return
            if out:
                yield encode(out)
        if writer.finish_reason is None:
            raise UpstreamError(
                FailureKind.STREAM_CUT, "the upstream stream ended before it was complete"
            )
        yield encode(writer.finish())  # finished, though without [DONE]
    except EventTooLarge as exc:
        raise UpstreamError(
            FailureKind.OVERSIZE, f"an upstream stream event exceeds {exc.limit} bytes"
        ) from exc
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def chat_chunk(name: str | None, data: str) -> dict[str, Any]:
    """An event's JSON object; an ``error`` event that is not JSON as an error object."""
    try:
        chunk: Any = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        chunk = None
    if isinstance(chunk, dict):
        return chunk
    if name == "error":
        return {"error": {"message": data}}
    raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream sent an event that is not JSON")


def failed_at_once(error: Any, chunk: dict[str, Any], api_key: str | None) -> UpstreamError:
    """The failure of a stream whose first event is an error: a 502 with its redacted body."""
    redacted = redact_json({"error": error if isinstance(error, dict) else chunk}, api_key)
    return UpstreamError(
        FailureKind.HTTP_5XX,
        "upstream stream failed at once",
        status=502,
        body=_ENCODER.encode(redacted),
    )


def encode(events: list[Event]) -> bytes:
    return b"".join(encode_event(_ENCODER.encode(e), str(e["type"])) for e in events)
