"""Server-sent events: an incremental decoder and an encoder (pure, no I/O).

The decoder follows the WHATWG "event stream interpretation" rules:

- the stream is UTF-8; one leading BOM is ignored;
- lines end in ``\\r\\n``, ``\\n`` or ``\\r`` (a ``\\r\\n`` may be split across feeds);
- ``:`` starts a comment; ``field: value`` loses one leading space of its value;
  a line without a colon is a field with an empty value; unknown fields are ignored;
- ``data`` lines are joined with ``\\n``; ``event`` names the event; ``id`` sets the
  last event id (it persists across events, as the spec says; an id holding NUL is
  ignored); ``retry`` is kept when it is all ASCII digits;
- a blank line dispatches the event, unless it has no data line (then it is dropped);
- at end of stream an unterminated event is discarded (``flush``).

Besides the parsed events the decoder hands back each block's exact bytes, so a
relay can forward the events it does not modify byte-identical (``feed_raw``).

An event is held whole until its blank line arrives, so a decoder given
``max_event_bytes`` raises ``EventTooLarge`` as soon as one block (complete or
still arriving) is larger: an upstream cannot make it buffer without limit.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from gateway.domain.errors import GatewayException

_BOM = b"\xef\xbb\xbf"
_EOL = re.compile(rb"\r\n|\r|\n")


class SSEEvent(NamedTuple):
    """One dispatched event (a tuple: one is made for every event of every stream)."""

    event: str | None
    data: str
    id: str | None = None
    retry: int | None = None


class EventTooLarge(GatewayException):
    """One event (block) of the stream is larger than the decoder's ``max_event_bytes``."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"an event of the stream exceeds {limit} bytes")
        self.limit = limit


class RawEvent(NamedTuple):
    """One block of the stream up to and including its terminating blank line.

    ``event`` is None for a block that dispatches nothing (a keep-alive comment, a
    block without data lines, a stray blank line): a relay may still forward ``raw``.
    """

    event: SSEEvent | None
    raw: bytes


class SSEDecoder:
    """Incremental decoder: feed it bytes as they arrive, in chunks of any size.

    Concatenating every returned ``raw`` gives back the bytes fed so far, except
    the tail of the event still being received.
    """

    __slots__ = (
        "_buf",
        "_data",
        "_event",
        "_last_id",
        "_max",
        "_pos",
        "_retry",
        "_scanned",
        "_started",
    )

    def __init__(self, max_event_bytes: int | None = None) -> None:
        self._max = max_event_bytes
        # The current block's bytes (kept whole for ``raw``) followed by unread bytes.
        self._buf = bytearray()
        self._pos = 0  # where the first line not yet interpreted starts in _buf
        self._scanned = 0  # _buf[:_scanned] is known to hold no line end past _pos
        self._data: list[str] = []
        self._event: str | None = None
        self._last_id: str | None = None
        self._retry: int | None = None
        self._started = False  # the leading BOM has been dealt with

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        return [item.event for item in self.feed_raw(chunk) if item.event is not None]

    def feed_raw(self, chunk: bytes) -> list[RawEvent]:
        if self._buf or not self._started or b"\r" in chunk:
            return self._feed_general(chunk)
        # At a block boundary (nothing held: every interpreted line's bytes stay in _buf
        # until its block dispatches, so no field is pending either). A model's stream is
        # one ``data: ...`` line and a blank line an event, one or a few events a read:
        # such blocks are dispatched here without the line-by-line walk (the same events,
        # the same raw bytes); the first other block and all after it take the walk.
        out: list[RawEvent] = []
        pos = 0
        limit = self._max
        while True:
            end = chunk.find(b"\n\n", pos)
            if end < 0 or not chunk.startswith(b"data:", pos) or chunk.find(b"\n", pos) != end:
                break
            if limit is not None and end + 2 - pos > limit:
                raise EventTooLarge(limit)
            value = pos + 6 if chunk.startswith(b" ", pos + 5) else pos + 5
            data = chunk[value:end].decode("utf-8", errors="replace")
            out.append(RawEvent(SSEEvent(None, data, self._last_id, None), chunk[pos : end + 2]))
            pos = end + 2
        if pos < len(chunk):
            out += self._feed_general(chunk[pos:] if pos else chunk)
        return out

    def _feed_general(self, chunk: bytes) -> list[RawEvent]:
        self._buf += chunk
        out = self._drain(final=False)
        if self._max is not None and len(self._buf) > self._max:
            raise EventTooLarge(self._max)  # the event still arriving is too large already
        return out

    def flush(self) -> list[SSEEvent]:
        """End of stream: a pending line ending in ``\\r`` completes; the rest is discarded."""
        return [item.event for item in self.flush_raw() if item.event is not None]

    def flush_raw(self) -> list[RawEvent]:
        out = self._drain(final=True)
        # Spec: "any pending data must be discarded" at end of file.
        self._buf.clear()
        self._pos = self._scanned = 0
        self._reset_block()
        return out

    def _drain(self, *, final: bool) -> list[RawEvent]:
        buf = self._buf
        out: list[RawEvent] = []
        pos = self._pos
        if not self._started:
            if not final and len(buf) < len(_BOM) and _BOM.startswith(buf):
                return out  # could still become a BOM
            self._started = True
            if buf.startswith(_BOM):
                pos = len(_BOM)  # skipped, yet part of the first block's raw bytes
        block = 0  # where the current block starts
        size = len(buf)
        scan = max(pos, self._scanned)
        while True:
            start, end = _line_end(buf, scan, size)
            if start < 0:
                scan = size
                break
            if end < 0 and not final:
                scan = start  # a lone trailing \r may be half of \r\n
                break
            if end < 0:
                end = size  # at end of stream a trailing \r ends its line
            if start == pos:
                if self._max is not None and end - block > self._max:
                    raise EventTooLarge(self._max)
                out.append(self._dispatch(bytes(buf[block:end])))
                block = end
            elif buf[pos] != 0x3A:  # ":" starts a comment
                self._field(buf[pos:start].decode("utf-8", errors="replace"))
            pos = scan = end
        del buf[:block]
        self._pos = pos - block
        self._scanned = scan - block
        return out

    def _field(self, line: str) -> None:
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value or None  # an empty type means the default "message"
        elif name == "id":
            if "\0" not in value:
                self._last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)

    def _dispatch(self, raw: bytes) -> RawEvent:
        if not self._data:
            self._reset_block()
            return RawEvent(None, raw)
        event = SSEEvent(
            event=self._event, data="\n".join(self._data), id=self._last_id, retry=self._retry
        )
        self._reset_block()
        return RawEvent(event, raw)

    def _reset_block(self) -> None:
        self._data = []
        self._event = None
        self._retry = None


def _line_end(buf: bytearray, scan: int, size: int) -> tuple[int, int]:
    """The next line end at or after ``scan``: (start, end), (-1, -1) if none yet,
    (start, -1) for a ``\\r`` that is the last byte (``\\r`` or half of ``\\r\\n``).

    ``find`` (memchr) rather than a regex: several times faster on long data lines.
    """
    newline = buf.find(b"\n", scan)
    carriage = buf.find(b"\r", scan, size if newline < 0 else newline)
    if carriage < 0:
        return (newline, newline + 1) if newline >= 0 else (-1, -1)
    if carriage + 1 == size:
        return carriage, -1
    return carriage, carriage + (2 if buf[carriage + 1] == 0x0A else 1)


def encode_event(data: str | bytes, event: str | None = None) -> bytes:
    """``event: x`` (optional), one ``data:`` line per line of data, a blank line.

    Line breaks in ``data`` (``\\r\\n``, ``\\r``, ``\\n``) all come back as ``\\n``.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    head = b""
    if event is not None:
        if "\n" in event or "\r" in event:
            raise ValueError("an SSE event name cannot hold a line break")
        head = b"event: " + event.encode("utf-8") + b"\n"
    if b"\n" not in payload and b"\r" not in payload:
        return head + b"data: " + payload + b"\n\n"
    lines = _EOL.split(payload)
    return head + b"".join(b"data: " + line + b"\n" for line in lines) + b"\n"
