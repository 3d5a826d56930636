"""Client connections: uvicorn's httptools protocol with the bounds a public edge needs.

uvicorn bounds neither the size nor the arrival time of a request head, never
closes a connection that sends nothing, and closes a connection as soon as an
answer that ends it is written, even while the client is still sending: a
client that sends its whole body before reading then gets a reset, not the
answer. This protocol adds, per connection:

- a cap on the request head (request line and headers): 431, then close;
- a deadline for a whole head, from the connection's start or from the first
  byte of a later request: 408 for a partial head, a silent close otherwise;
- an idle timeout between requests (keep-alive) and while a body stalls;
- a cap on open connections: past it, requests are answered 503;
- a lingering close: an answer that ends a connection whose request is still
  arriving half-closes it and discards what the client still sends before
  closing, so the client reads the answer. As nginx's ``lingering_time`` and
  ``lingering_timeout``, it ends 30 s after it began or 5 s after the last read,
  whichever comes first, and after 1 GiB (or ``server.maxBodyBytes``) discarded.

The checks cost a few attribute reads per read from the socket. Beyond the
one timer a new connection gets for its first head, a timer is armed only
when a later head or a body spans several reads.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec
from uvicorn.config import Config
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol
from uvicorn.server import ServerState

from gateway.api.cycle import CycleTransport, LeanEvent, PipelinedQueue
from gateway.domain.errors import (
    GatewayError,
    InvalidRequest,
    RequestHeadTimedOut,
    RequestHeadTooLarge,
    ServerBusy,
)
from gateway.domain.settings import ServerSettings

log = logging.getLogger(__name__)

_ENCODER = msgspec.json.Encoder()
# A closing connection discards what the client still sends for at most LINGER_SECONDS
# in all and LINGER_IDLE_SECONDS without a read: time, not bytes, bounds a client that
# sends its whole body before reading (20 MB takes well under a second on a fast link,
# a few seconds on a slow one), and one that goes quiet is closed soon.
LINGER_SECONDS = 30.0
LINGER_IDLE_SECONDS = 5.0
MIN_LINGER_BYTES = 1 << 30  # a generous cap: past it the client is sending on purpose

# The scope's key holding the connection's EdgeProtocol (``on_disconnect``).
EDGE_KEY = "gateway.edge"

# Where the parser is in the current request.
_WAITING, _HEAD, _BODY = 0, 1, 2


@dataclass(frozen=True, slots=True)
class EdgeLimits:
    max_header_bytes: int
    header_timeout: float
    idle_timeout: float
    max_connections: int
    linger_bytes: int  # discarded at most before a lingering close gives up

    @classmethod
    def from_settings(cls, server: ServerSettings) -> EdgeLimits:
        return cls(
            max_header_bytes=server.max_header_bytes,
            header_timeout=server.header_timeout_seconds,
            idle_timeout=server.idle_timeout_seconds,
            max_connections=server.max_connections,
            # A body the gateway would have accepted costs nothing new to read and drop.
            linger_bytes=max(server.max_body_bytes, MIN_LINGER_BYTES),
        )


def linger_left(started: float, last_read: float, now: float) -> float:
    """Seconds a lingering close has left (none: close now): the sooner of its total time
    and the idle time after the last read."""
    return min(started + LINGER_SECONDS, last_read + LINGER_IDLE_SECONDS) - now


def error_head(error: GatewayError) -> tuple[list[tuple[bytes, bytes]], bytes]:
    """An error's JSON envelope and the headers of an answer that ends the connection."""
    body = _ENCODER.encode(error.envelope())
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]
    headers.extend((k.encode(), v.encode("latin-1")) for k, v in error.headers().items())
    return headers, body


_BUSY_HEADERS, _BUSY_BODY = error_head(
    ServerBusy("The gateway has no free connection slot; retry shortly.")
)


async def _server_busy(scope: Any, receive: Any, send: Any) -> None:
    """The app a connection over ``server.maxConnections`` gets instead of the gateway."""
    await send({"type": "http.response.start", "status": 503, "headers": _BUSY_HEADERS})
    await send({"type": "http.response.body", "body": _BUSY_BODY, "more_body": False})


class EdgeProtocol(HttpToolsProtocol):
    # Its own state in slots: uvicorn's protocol sets about 30 attributes, and past that
    # many an instance's attributes no longer fit Python's compact shared-key layout (a
    # full dict of its own, about 1.6 KiB a connection, docs/performance.md).
    __slots__ = (
        "_body_timer",
        "_completed",
        "_cycle_transport",
        "_discard_left",
        "_head_bytes",
        "_head_timer",
        "_last_read",
        "_linger_started",
        "_linger_timer",
        "_lost_soon",
        "_on_lost",
        "_phase",
        "discarding",
        "limits",
    )

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
        *,
        limits: EdgeLimits,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        self.pipeline = PipelinedQueue()  # type: ignore[assignment]
        self.limits = limits
        self.limit_concurrency = None  # replaced by max_connections, answered with an envelope
        self.timeout_keep_alive = limits.idle_timeout  # type: ignore[assignment]  # a float works
        self.discarding = False  # the connection ends: what the client sends is dropped
        self._phase = _WAITING
        self._completed = False  # a request ended during the current read
        self._head_bytes = 0
        self._last_read = 0.0
        self._discard_left = 0
        self._linger_started = 0.0
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._cycle_transport: CycleTransport | None = None
        self._on_lost: Callable[[], None] | None = None
        self._lost_soon: asyncio.Handle | None = None  # a lost connection's callback, due

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        writable = LeanEvent()
        writable.set()  # as FlowControl starts: writable
        self.flow._is_writable_event = writable  # type: ignore[assignment]
        self._cycle_transport = CycleTransport(transport, self)
        self._head_timer = self.loop.call_later(self.limits.header_timeout, self._head_timed_out)
        if len(self.connections) > self.limits.max_connections:
            self.app = _server_busy

    def connection_lost(self, exc: Exception | None) -> None:
        for timer in (self._head_timer, self._body_timer, self._linger_timer):
            if timer is not None:
                timer.cancel()
        self._head_timer = self._body_timer = self._linger_timer = None
        super().connection_lost(exc)
        on_lost, self._on_lost = self._on_lost, None
        if on_lost is not None:
            on_lost()

    def on_disconnect(self, callback: Callable[[], None] | None) -> None:
        """``callback`` is called once if the connection is lost before it is unset (None):
        what a stream's relay is told by instead of a task of its own waiting on
        ``receive()`` for ``http.disconnect`` (the task and its waits were about 2.5 KiB of
        every open stream). A connection already lost calls it at the loop's next turn,
        unless it is unset before then: a relay that ends without suspending is not
        cancelled after it returned."""
        if self._lost_soon is not None:
            self._lost_soon.cancel()
            self._lost_soon = None
        if callback is not None and self.transport.is_closing():
            self._on_lost = None
            self._lost_soon = self.loop.call_soon(callback)
            return
        self._on_lost = callback

    def data_received(self, data: bytes) -> None:
        if self.discarding:
            self._discard(len(data))
            return
        self._completed = False
        super().data_received(data)
        if self.discarding or self.transport.is_closing():
            return
        phase = self._phase
        if phase == _BODY:
            self._last_read = self.loop.time()
            if self._body_timer is None:
                self._body_timer = self.loop.call_later(
                    self.limits.idle_timeout, self._body_stalled
                )
            return
        if self._completed and phase == _WAITING:
            return  # whole requests only
        # Part of a head (or blank lines before one). A read that also ended a request is
        # not counted: where the next head starts in it is unknown, and the next read counts.
        if phase == _HEAD and not self._completed:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                limit = self.limits.max_header_bytes
                self._refuse(RequestHeadTooLarge(f"The request head exceeds {limit} bytes."))
                return
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(
                self.limits.header_timeout, self._head_timed_out
            )

    # Parser callbacks: they track where the current request is.
    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._phase = _HEAD
        self._head_bytes = 0

    def on_headers_complete(self) -> None:
        self._phase = _BODY
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None
        before = self.cycle
        super().on_headers_complete()
        cycle = self.cycle
        if cycle is not None and cycle is not before:  # a new request's cycle, not started
            cycle.message_event = LeanEvent()  # type: ignore[assignment]
            cycle.scope[EDGE_KEY] = self  # type: ignore[literal-required]
        if cycle is not None and self._cycle_transport is not None:
            cycle.transport = self._cycle_transport
            self._cycle_transport.begin(cycle)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._phase = _WAITING
        self._completed = True
        if self._body_timer is not None:
            self._body_timer.cancel()
            self._body_timer = None

    def on_response_complete(self) -> None:
        if self.discarding:  # the connection ends: no keep-alive, no pipelined request
            self.server_state.total_requests += 1
            self.pipeline.clear()
            return
        super().on_response_complete()

    def send_400_response(self, msg: str) -> None:
        self._refuse(InvalidRequest(msg))

    def _unsupported_upgrade_warning(self) -> None:
        # The gateway serves no upgrades; a warning per request would let anyone flood the log.
        log.debug("ignored an Upgrade header")

    def end_connection(self) -> None:
        """A request cycle closes the connection: linger while the client may still send."""
        if self.discarding or self._phase != _WAITING:
            self._linger()
        else:
            self.transport.close()

    def _refuse(self, error: GatewayError) -> None:
        """Answer ``error`` and end the connection, or end it after the answer in flight."""
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete:
            cycle.keep_alive = False
            self._start_discarding()
            return
        headers, body = error_head(error)
        content = [STATUS_LINE[error.http_status]]
        for name, value in (*self.server_state.default_headers, *headers):
            content.extend((name, b": ", value, b"\r\n"))
        content.extend((b"\r\n", body))
        self.transport.write(b"".join(content))
        self._linger()

    def _start_discarding(self) -> None:
        if not self.discarding:
            self.discarding = True
            self._discard_left = self.limits.linger_bytes
            for timer in (self._head_timer, self._body_timer):
                if timer is not None:
                    timer.cancel()
            self._head_timer = self._body_timer = None

    def _linger(self) -> None:
        """Half-close after the answer, drop what still arrives, close within the bounds."""
        self._start_discarding()
        transport = self.transport
        if self._linger_timer is not None or transport.is_closing():
            return
        if transport.can_write_eof():
            transport.write_eof()
        self.flow.resume_reading()
        self._linger_started = self._last_read = self.loop.time()
        self._linger_timer = self.loop.call_later(LINGER_IDLE_SECONDS, self._linger_check)

    def _linger_check(self) -> None:
        left = linger_left(self._linger_started, self._last_read, self.loop.time())
        if left > 0:
            self._linger_timer = self.loop.call_later(left, self._linger_check)
        else:
            self._linger_timer = None
            self.transport.close()

    def _discard(self, size: int) -> None:
        self._discard_left -= size
        self._last_read = self.loop.time()
        if self._discard_left < 0:
            self.transport.close()

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.discarding or self.transport.is_closing():
            return
        cycle = self.cycle
        if self._phase == _HEAD:  # answered after the answer in flight, if there is one
            seconds = self.limits.header_timeout
            self._refuse(RequestHeadTimedOut(f"The request head took over {seconds:g} seconds."))
        elif cycle is not None and not cycle.response_complete:
            cycle.keep_alive = False  # only blank lines during an answer: end after it
        else:
            self.transport.close()  # nothing came, or only blank lines

    def _body_stalled(self) -> None:
        self._body_timer = None
        if self._phase != _BODY or self.discarding or self.transport.is_closing():
            return
        now = self.loop.time()
        if self.flow.read_paused:
            self._last_read = now  # the app, not the client, is not reading
        left = self.limits.idle_timeout - (now - self._last_read)
        if left > 0:
            self._body_timer = self.loop.call_later(left, self._body_stalled)
        else:
            self.transport.close()
