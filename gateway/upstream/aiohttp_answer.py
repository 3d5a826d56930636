"""Reading an aiohttp answer with little held per open stream: the ``UpstreamResponse`` of
the aiohttp path (:mod:`gateway.upstream.http`), its body's chunks in one small iterator,
aiohttp's deques swapped for lists, and one read deadline per answer instead of aiohttp's
timer per read (docs/performance.md, "An open stream's memory and the read timer")."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator, Mapping
from typing import Any

import aiohttp
from aiohttp.client_proto import ResponseHandler

CHUNK_BYTES = 16 * 1024


class AiohttpResponse:
    __slots__ = ("_deadline", "_response", "headers", "status_code")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code = response.status
        self.headers: Mapping[str, str] = response.headers
        self._deadline: ReadDeadline | None = None
        # The head's headers as bytes, besides ``headers``: nothing reads them, and they
        # are about 100 bytes a header for as long as the answer is open (a provider's
        # answer has 10-20). tests/unit/upstream/test_lean_queues.py pins the name.
        if isinstance(getattr(response, "_raw_headers", None), tuple):
            response._raw_headers = ()

    def chunks(self) -> AsyncIterator[bytes]:
        # What has arrived, at most CHUNK_BYTES at a time: a stream decoder then sees the
        # events before a later oversize one in separate pieces. An iterator object, not a
        # generator: a paced stream takes a step per event.
        response = self._response
        connection = response.connection
        protocol = None if connection is None else connection.protocol
        chunked = "chunked" in response.headers.get("transfer-encoding", "").lower()
        lean_queues(response.content, protocol, chunked=chunked)
        if self._deadline is None and isinstance(protocol, ResponseHandler):
            timeout = protocol.read_timeout
            if timeout:  # the body's waits for bytes are bounded by a lazy deadline
                self._deadline = ReadDeadline(protocol, response.content, timeout)
        return _Chunks(response.content)

    async def aclose(self) -> None:
        deadline = self._deadline
        if deadline is not None:
            self._deadline = None
            deadline.stop()
        self._response.release()


class _Chunks:
    """``StreamReader.iter_chunked(CHUNK_BYTES)`` in one small object: aiohttp's is an
    iterator around a lambda and its closure, about 440 bytes an open stream."""

    __slots__ = ("_content",)

    def __init__(self, content: aiohttp.StreamReader) -> None:
        self._content = content

    def __aiter__(self) -> _Chunks:
        return self

    async def __anext__(self) -> bytes:
        chunk = await self._content.read(CHUNK_BYTES)
        if not chunk:
            raise StopAsyncIteration
        return chunk


class LeanQueue(list[Any]):
    """``collections.deque``'s ``append``, ``appendleft``, ``popleft``, indexing and length
    as a list. aiohttp holds what arrived of an answer in three deques (the body's bytes,
    where its HTTP chunks end, the connection's parsed messages), about 760 bytes each
    when made; a paced stream's hold a few items at most (aiohttp pauses reading past a
    bound), and a list of them is about 100 bytes (docs/performance.md)."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)

    def popleft(self) -> Any:
        return self.pop(0)


# The deques swapped (tests/unit/upstream/test_lean_queues.py fails if aiohttp renames one).
_BODY_QUEUES = ("_buffer", "_http_chunk_splits")  # of an aiohttp.StreamReader
_CONNECTION_QUEUE = "_buffer"  # of a ResponseHandler (an aiohttp DataQueue)


def lean_queues(content: aiohttp.StreamReader, protocol: object, *, chunked: bool) -> None:
    """Swap the deques of an answer's body (and of its connection) for ``LeanQueue``s,
    with what they hold; any other type is left as it is. A chunked body whose first
    chunk has not arrived gets its (empty) list of chunk ends now: aiohttp makes the deque
    at that chunk, unless one is there."""
    if chunked and content.total_bytes == 0 and getattr(content, _BODY_QUEUES[1], 0) is None:
        setattr(content, _BODY_QUEUES[1], LeanQueue())
    for owner, names in ((content, _BODY_QUEUES), (protocol, (_CONNECTION_QUEUE,))):
        for name in names:
            queue = getattr(owner, name, None)
            if type(queue) is collections.deque:
                setattr(owner, name, LeanQueue(queue))


class ReadDeadline:
    """``sock_read`` for a body, at one timer per stream instead of one per read.

    aiohttp bounds each wait for bytes by cancelling its timer and arming a new one on
    every read from the socket: for a paced stream, a timer made and cancelled per event
    (about 2 µs each, docs/performance.md). Once the answer's head is in, the body's bound
    is kept here instead: the connection's own timer is switched off (``read_timeout``
    None; it is set again for the next request on the connection) and this one looks at
    the bytes received (``total_bytes``) every ``timeout / CHECKS`` seconds. The body
    fails as aiohttp fails it (``SocketTimeoutError`` on the connection and the body) once
    no byte came for ``timeout`` seconds while the connection was reading: never sooner,
    at most a ``CHECKS``-th later. While reading is paused (the gateway has not taken
    what arrived: its client is slow) the silence is not the upstream's, as with aiohttp.
    """

    __slots__ = (
        "_content",
        "_handle",
        "_loop",
        "_paused",
        "_protocol",
        "_seen",
        "_since",
        "_timeout",
    )
    CHECKS = 4

    def __init__(
        self, protocol: ResponseHandler, content: aiohttp.StreamReader, timeout: float
    ) -> None:
        self._protocol = protocol
        self._content = content
        self._timeout = timeout
        self._loop = loop = asyncio.get_running_loop()
        self._seen = content.total_bytes
        self._since = loop.time()  # when the bytes received last changed (as seen here)
        self._paused = _reading_paused(protocol)  # as seen at the last look
        # The connection's timer, armed at its last read, goes on until its next read.
        protocol.read_timeout = None
        self._handle: asyncio.TimerHandle | None = loop.call_at(
            self._since + timeout / self.CHECKS, self._check
        )

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _check(self) -> None:
        self._handle = None
        content = self._content
        protocol = self._protocol
        if content.is_eof() or content.exception() is not None or protocol.transport is None:
            return  # the body is complete or has failed: nothing more to bound
        now = self._loop.time()
        total = content.total_bytes
        paused = _reading_paused(protocol)
        # A pause seen at the last look may have ended at any time since: the upstream's
        # silence is counted from now, never from before its end (aiohttp's timer starts
        # again when reading resumes).
        was_paused, self._paused = self._paused, paused
        if total != self._seen or paused or was_paused:
            self._seen = total
            self._since = now
        elif now - self._since >= self._timeout:
            error = aiohttp.SocketTimeoutError("Timeout on reading data from socket")
            protocol.set_exception(error)
            content.set_exception(error)
            return
        step = self._timeout / self.CHECKS
        self._handle = self._loop.call_at(min(now + step, self._since + self._timeout), self._check)


def _reading_paused(protocol: ResponseHandler) -> bool:
    """aiohttp stops reading while what it holds is not taken (and then stops its timer)."""
    return bool(getattr(protocol, "_reading_paused", False)) or bool(
        getattr(protocol, "_buffer_paused", False)
    )
