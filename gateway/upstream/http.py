"""The process's one pooled upstream client and the answer every adapter reads from it
(``UpstreamResponse``); ``gateway.upstream.exchange`` sends a request over it and reads
the answer. Nothing above ``upstream`` sees httpx or aiohttp.

Calls go to aiohttp directly: httpx's default transport was the largest single cost
measured on this machine, and the httpx layer over aiohttp (httpx-aiohttp, used before)
still cost about a tenth of a call's CPU under load (docs/performance.md). An httpx
transport can still be plugged in (``create_app(transport=...)``, e.g.
``httpx.MockTransport``), and ``GATEWAY_UPSTREAM_TRANSPORT=httpx`` selects httpx's default
transport, for benchmarks. Either way an adapter sees an ``UpstreamResponse``, and a
transport failure as an ``aiohttp.ClientError`` (httpx's are mapped onto aiohttp's).
httpx is imported only on that path: with it come its command line's rich and pygments,
about 10 MB of a serving process that never uses them (docs/performance.md).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import aiohttp
import yarl

from gateway.upstream.aiohttp_answer import AiohttpResponse

if TYPE_CHECKING:
    import httpx

Transport: TypeAlias = "httpx.AsyncBaseTransport"  # what tests may plug in (MockTransport)

POOL_SIZE = 2048  # the default of server.maxUpstreamConnections (= server.maxConnections)
KEEPALIVE_SECONDS = 30
# httpx's errors arrive mapped onto aiohttp's (_as_aiohttp_errors).
TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError)


@dataclass(frozen=True, slots=True)
class ReadLimits:
    """How much of an upstream answer the gateway holds at once (``server.maxUpstream*``)."""

    body_bytes: int = 64 * 1024 * 1024  # a whole (non-stream) answer
    event_bytes: int = 8 * 1024 * 1024  # one event of a stream


class UpstreamResponse(Protocol):
    """A 2xx or error answer whose body has not been read yet."""

    @property
    def status_code(self) -> int: ...

    @property
    def headers(self) -> Mapping[str, str]: ...  # names looked up case-insensitively

    def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives (a transport failure raises an aiohttp.ClientError)."""
        ...

    async def aclose(self) -> None:
        """Done with it: a connection whose body was not read to its end is closed."""
        ...


class _HttpxResponse:
    __slots__ = ("_response", "headers", "status_code")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        """A transport that read the body already (MockTransport) gives it whole."""
        import httpx  # only on this path (the module's doc): a name for the except below

        try:
            content = self._response.content
        except httpx.ResponseNotRead:
            with _as_aiohttp_errors():
                async for chunk in self._response.aiter_raw():
                    yield chunk
            return
        if content:
            yield content

    async def aclose(self) -> None:
        with _as_aiohttp_errors():
            await self._response.aclose()


@contextlib.contextmanager
def _as_aiohttp_errors() -> Iterator[None]:
    """httpx's transport failures as the aiohttp errors the adapters handle."""
    import httpx

    try:
        yield
    except httpx.TimeoutException as exc:
        raise aiohttp.ServerTimeoutError(f"{type(exc).__name__}: {exc}") from exc
    except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.NetworkError) as exc:
        raise aiohttp.ClientConnectionError(f"{type(exc).__name__}: {exc}") from exc
    except httpx.HTTPError as exc:
        raise aiohttp.ClientError(f"{type(exc).__name__}: {exc}") from exc


class _CountingConnector(aiohttp.TCPConnector):
    """aiohttp's pool, counting the calls that wait for a free connection.

    Only the slow path is counted (the pool is full), so a call that finds a connection
    pays nothing. ``_wait_for_available_connection`` is where aiohttp queues such a call
    (3.10 and later); on an aiohttp without it nothing is counted.
    """

    def __init__(self, limit: int) -> None:
        super().__init__(limit=limit, keepalive_timeout=KEEPALIVE_SECONDS)
        self.waiting = 0  # calls waiting now
        self.waits = 0  # calls that had to wait, since start

    async def _wait_for_available_connection(self, *args: Any, **kwargs: Any) -> None:
        self.waiting += 1
        self.waits += 1
        try:
            await super()._wait_for_available_connection(*args, **kwargs)
        finally:
            self.waiting -= 1


@dataclass(frozen=True, slots=True)
class PoolFigures:
    """What ``/metrics`` shows of the upstream pool."""

    size: int
    waiting: int
    waits: int


class UpstreamHTTP:
    """The process's one pooled client, and the way calls reach it.

    A proxy wants none of a client library's redirect, auth-flow or cookie handling (a
    cookie jar shared by every tenant would hand one caller's cookies to the next): the
    session keeps no cookies, follows no redirect and leaves bodies compressed as sent.
    """

    def __init__(
        self,
        transport: httpx.AsyncBaseTransport | None = None,
        limits: ReadLimits | None = None,
        pool_size: int = POOL_SIZE,
    ) -> None:
        self.limits = limits or ReadLimits()
        self.pool_size = pool_size
        if transport is None and os.environ.get("GATEWAY_UPSTREAM_TRANSPORT") == "httpx":
            transport = _httpx_default_transport(pool_size)
        self._transport = transport
        self._session: aiohttp.ClientSession | None = None  # made in the loop, on first use
        self._connector: _CountingConnector | None = None

    def pool(self) -> PoolFigures:
        connector = self._connector
        if connector is None:
            return PoolFigures(self.pool_size, 0, 0)
        return PoolFigures(self.pool_size, connector.waiting, connector.waits)

    async def post(
        self, url: str, headers: dict[str, str], content: bytes, wait_seconds: float
    ) -> UpstreamResponse:
        """``wait_seconds`` bounds connecting and each wait for bytes (not the whole body).

        ``headers`` are sent as given; the host and content-length are added.
        """
        if self._transport is not None:
            return await self._post_httpx(url, headers, content, wait_seconds)
        session = self._session
        if session is None:
            self._connector = _CountingConnector(self.pool_size)
            session = self._session = _session(self._connector)
        response = await session.post(
            _yarl_url(url),
            data=content,
            headers=headers,
            timeout=_timeout(wait_seconds),
            allow_redirects=False,
            auto_decompress=False,
        )
        return AiohttpResponse(response)

    async def _post_httpx(
        self, url: str, headers: dict[str, str], content: bytes, limit: float
    ) -> UpstreamResponse:
        import httpx

        assert self._transport is not None
        raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
        parsed = _httpx_url(url)
        raw.append((b"host", parsed.netloc))
        raw.append((b"content-length", str(len(content)).encode()))
        request = httpx.Request(
            "POST",
            parsed,
            headers=raw,
            stream=httpx.ByteStream(content),
            extensions={
                "timeout": {"connect": limit, "read": limit, "write": limit, "pool": limit}
            },
        )
        request.read()  # the body is in memory: transports may read .content directly
        with _as_aiohttp_errors():
            return _HttpxResponse(await self._transport.handle_async_request(request))

    async def aclose(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None
        if self._transport is not None:
            await self._transport.aclose()


def body_chunks(response: UpstreamResponse) -> AsyncIterator[bytes]:
    """The body as it arrives."""
    return response.chunks()


def _session(connector: aiohttp.BaseConnector) -> aiohttp.ClientSession:
    # No cookies: a proxy keeps no state between its callers.
    return aiohttp.ClientSession(connector=connector, cookie_jar=aiohttp.DummyCookieJar())


@functools.lru_cache(maxsize=1024)
def _yarl_url(url: str) -> yarl.URL:
    """Parsed once per provider and endpoint, not per call."""
    return yarl.URL(url)


@functools.lru_cache(maxsize=64)
def _timeout(wait_seconds: float) -> aiohttp.ClientTimeout:
    """One (frozen) ClientTimeout per bound: most calls are bounded by their provider's
    ``timeoutSeconds`` (only a call near its deadline gets a value of its own), and
    building one cost about as much as the rest of ``post``."""
    return aiohttp.ClientTimeout(
        sock_connect=wait_seconds, sock_read=wait_seconds, connect=wait_seconds
    )


@functools.lru_cache(maxsize=1024)
def _httpx_url(url: str) -> httpx.URL:
    import httpx

    return httpx.URL(url)


def _httpx_default_transport(pool_size: int) -> httpx.AsyncBaseTransport:
    import httpx

    limits = httpx.Limits(
        max_connections=pool_size, max_keepalive_connections=128, keepalive_expiry=30
    )
    return httpx.AsyncHTTPTransport(limits=limits)
