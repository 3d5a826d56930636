"""AWS event-stream frames (ConverseStream's answer) decoded by botocore's
``EventStreamBuffer``, which checks each frame's prelude and message CRCs; an event past
the gateway's size cap is refused before it is buffered whole."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from gateway.domain.errors import GatewayException
from gateway.streaming.sse import EventTooLarge


class FrameTooLarge(EventTooLarge):
    """A frame larger than the gateway's event cap (``server.maxUpstreamEventBytes``)."""


class BadFrame(GatewayException):
    """A frame botocore could not decode (a CRC mismatch, a bad length)."""


@dataclass(frozen=True, slots=True)
class Frame:
    message_type: str  # event | exception | error
    name: str  # :event-type, :exception-type or :error-code
    payload: bytes


class FrameDecoder:
    def __init__(self, max_frame_bytes: int) -> None:
        from botocore.eventstream import EventStreamBuffer

        self._buffer: Any = EventStreamBuffer()
        self._limit = max_frame_bytes
        self._pending = 0  # bytes fed and not yet decoded into a frame

    def feed(self, data: bytes) -> Iterator[Frame]:
        from botocore.eventstream import ParserError

        self._pending += len(data)
        self._buffer.add_data(data)
        try:
            for message in self._buffer:
                self._pending -= message.prelude.total_length
                headers = message.headers
                kind = str(headers.get(":message-type", "event"))
                key = {"event": ":event-type", "exception": ":exception-type"}.get(
                    kind, ":error-code"
                )
                yield Frame(kind, str(headers.get(key, "")), bytes(message.payload))
        except ParserError as exc:
            raise BadFrame(type(exc).__name__) from exc
        if self._pending > self._limit:
            raise FrameTooLarge(self._limit)
