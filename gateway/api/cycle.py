"""uvicorn's per-connection objects, in the gateway's own leaner kinds: the transport a
request cycle writes to (its answer's head joined to the first body bytes), the events
uvicorn makes per connection and per request, and its queue of pipelined requests
(:class:`gateway.api.connection.EdgeProtocol` puts them in)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol


class TransportOwner(Protocol):
    """What the cycle's transport asks of its connection's protocol."""

    loop: asyncio.AbstractEventLoop
    discarding: bool

    def end_connection(self) -> None: ...


class CycleTransport(asyncio.Transport):
    """What a request cycle writes to: the socket, but closing it is the protocol's call.

    The head of an answer is held until the answer's first body bytes are written, and
    both go out in one write: one send and one segment rather than two for a whole answer,
    and a stream's head leaves with its first event (the writes to the client were 10-17 %
    of a call's samples: docs/performance.md). A head is never held past the event loop's
    next turn: when no body follows at once (a body still being made, none at all) it goes
    out then. A HEAD answer's head, one with an empty body, and anything before the head
    (``100 Continue``) are written at once.
    """

    __slots__ = ("_cycle", "_flush_later", "_head", "_protocol", "_real")

    def __init__(self, real: asyncio.Transport, protocol: TransportOwner) -> None:
        super().__init__()
        self._real = real
        self._protocol = protocol
        self._cycle: Any = None  # the cycle whose head has not been written yet
        self._head: bytes | None = None
        self._flush_later: asyncio.Handle | None = None

    def begin(self, cycle: Any) -> None:
        """A new request's cycle writes here from now on. A head still held is the answer
        in flight's (a pipelined request's cycle runs only once that answer is complete)."""
        self._cycle = cycle

    def write(self, data: bytes | bytearray | memoryview) -> None:
        head = self._take_head()
        if head is not None:
            self._real.write(head + data)
            return
        cycle = self._cycle
        if cycle is not None and cycle.response_started:  # this is the answer's head
            self._cycle = None
            if cycle.scope["method"] != "HEAD" and (
                cycle.chunked_encoding or cycle.expected_content_length > 0
            ):
                self._head = bytes(data)
                self._flush_later = self._protocol.loop.call_soon(self._flush)
                return
        self._real.write(data)

    def _take_head(self) -> bytes | None:
        head, self._head = self._head, None
        if self._flush_later is not None:
            self._flush_later.cancel()
            self._flush_later = None
        return head

    def _flush(self) -> None:
        self._flush_later = None
        head, self._head = self._head, None
        if head is not None and not self._real.is_closing():
            self._real.write(head)

    def is_closing(self) -> bool:
        return self._protocol.discarding or self._real.is_closing()

    def close(self) -> None:
        head = self._take_head()
        if head is not None:  # an answer cut short after its head: as before, head then end
            self._real.write(head)
        self._protocol.end_connection()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._real.get_extra_info(name, default)


class LeanEvent:
    """``asyncio.Event`` for the events uvicorn makes per connection and per request (the
    cycle's ``message_event``, ``FlowControl``'s writable event): the same ``set``,
    ``clear``, ``is_set`` and ``wait``, its waiters in a list made at the first wait rather
    than a deque made with it (a deque is about 600 bytes; a paced stream holds two)."""

    __slots__ = ("_value", "_waiters")

    def __init__(self) -> None:
        self._value = False
        self._waiters: list[asyncio.Future[bool]] | None = None

    def is_set(self) -> bool:
        return self._value

    def set(self) -> None:
        if not self._value:
            self._value = True
            if self._waiters:
                for waiter in self._waiters:
                    if not waiter.done():
                        waiter.set_result(True)

    def clear(self) -> None:
        self._value = False

    async def wait(self) -> bool:
        if self._value:
            return True
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        if self._waiters is None:
            self._waiters = []
        self._waiters.append(waiter)
        try:
            await waiter
            return True
        finally:
            self._waiters.remove(waiter)


class PipelinedQueue(list[Any]):
    """uvicorn's queue of pipelined requests (``appendleft``, ``pop``, ``clear``) as a
    list: almost always empty, where a deque is about 600 bytes a connection."""

    __slots__ = ()

    def appendleft(self, item: Any) -> None:
        self.insert(0, item)
