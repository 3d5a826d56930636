"""The process's one pooled upstream client, and the plumbing every adapter shares.

``send_json`` posts a request and turns a non-2xx answer into an ``UpstreamError`` whose
body is safe to relay; ``read_json_object`` reads a whole answer within its cap;
``first_chunk`` reads a stream's first chunk while a fallback may still answer, and
``relay_rest`` yields the stream after it; ``classify_transport_error`` names a transport
failure by its ``FailureKind``. Nothing above ``upstream`` sees httpx or aiohttp.

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
import sys
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias

import aiohttp
import msgspec
import yarl

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind, kind_for_status
from gateway.domain.model import Provider
from gateway.upstream.base import UpstreamCall
from gateway.upstream.error_body import ErrorBody, openai_envelope, read_error_body

if TYPE_CHECKING:
    import httpx

Transport: TypeAlias = "httpx.AsyncBaseTransport"  # what tests may plug in (MockTransport)

MAX_CONNECTIONS = 512
KEEPALIVE_SECONDS = 30
CHUNK_BYTES = 16 * 1024
MAX_ERROR_BODY = 64 * 1024
# httpx's errors arrive mapped onto aiohttp's (_as_aiohttp_errors).
TRANSPORT_ERRORS = (aiohttp.ClientError, TimeoutError)
_ENCODER = msgspec.json.Encoder()


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


class _AiohttpResponse:
    __slots__ = ("_response", "headers", "status_code")

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response
        self.status_code = response.status
        self.headers: Mapping[str, str] = response.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        # What has arrived, at most CHUNK_BYTES at a time: a stream decoder then sees the
        # events before a later oversize one in separate pieces.
        async for chunk in self._response.content.iter_chunked(CHUNK_BYTES):
            yield chunk

    async def aclose(self) -> None:
        self._response.release()


class _HttpxResponse:
    __slots__ = ("_response", "headers", "status_code")

    def __init__(self, response: httpx.Response) -> None:
        self._response = response
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        """A transport that read the body already (MockTransport) gives it whole."""

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


class UpstreamHTTP:
    """The process's one pooled client, and the way calls reach it.

    A proxy wants none of a client library's redirect, auth-flow or cookie handling (a
    cookie jar shared by every tenant would hand one caller's cookies to the next): the
    session keeps no cookies, follows no redirect and leaves bodies compressed as sent.
    """

    def __init__(
        self, transport: httpx.AsyncBaseTransport | None = None, limits: ReadLimits | None = None
    ) -> None:
        self.limits = limits or ReadLimits()
        if transport is None and os.environ.get("GATEWAY_UPSTREAM_TRANSPORT") == "httpx":
            transport = _httpx_default_transport()
        self._transport = transport
        self._session: aiohttp.ClientSession | None = None  # made in the loop, on first use

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
            session = self._session = _session()
        response = await session.post(
            _yarl_url(url),
            data=content,
            headers=headers,
            timeout=_timeout(wait_seconds),
            allow_redirects=False,
            auto_decompress=False,
        )
        return _AiohttpResponse(response)

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


def _session() -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=MAX_CONNECTIONS, keepalive_timeout=KEEPALIVE_SECONDS)
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


def _httpx_default_transport() -> httpx.AsyncBaseTransport:
    import httpx

    limits = httpx.Limits(
        max_connections=MAX_CONNECTIONS, max_keepalive_connections=128, keepalive_expiry=30
    )
    return httpx.AsyncHTTPTransport(limits=limits)


def timeout_for(read_timeout: float, remaining: float) -> float:
    """``timeoutSeconds`` bounds connecting and each wait for bytes; never past the deadline."""
    return max(0.001, min(read_timeout, remaining))


# How an adapter turns an upstream error body into (status for the client, envelope).
ErrorShape = Callable[[int, ErrorBody], tuple[int, dict[str, Any]]]


def openai_error(status: int, body: ErrorBody) -> tuple[int, dict[str, Any]]:
    return status, openai_envelope(status, body)


async def send_json(
    client: UpstreamHTTP,
    call: UpstreamCall,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
    shape: ErrorShape = openai_error,
) -> UpstreamResponse:
    """POST a JSON body; a 2xx response comes back unread, anything else as UpstreamError."""
    timeout = timeout_for(call.provider.timeout_seconds, call.remaining_seconds)
    try:
        response = await client.post(url, headers, _ENCODER.encode(payload), timeout)
    except TRANSPORT_ERRORS as exc:
        raise classify_transport_error(exc) from exc
    if response.status_code < 300:
        return response
    raise await http_error(response, call.provider, shape)


async def http_error(
    response: UpstreamResponse, provider: Provider, shape: ErrorShape
) -> UpstreamError:
    """A non-2xx answer as an UpstreamError whose body is an envelope safe to relay.

    A redirect (never followed) and a refusal of the gateway's credentials end as the
    gateway's own errors: their bodies are never read, let alone relayed.
    """
    status = response.status_code
    kind = kind_for_status(status)
    if kind == FailureKind.INVALID_RESPONSE:
        await response.aclose()
        message = f"upstream answered a redirect (HTTP {status}), which is not followed"
        return UpstreamError(kind, message)
    if kind == FailureKind.AUTH_REJECTED:
        await response.aclose()
        message = f"provider {provider.id} rejected the gateway's credentials (HTTP {status})"
        return UpstreamError(kind, message)
    try:
        raw = await read_all(response, limit=MAX_ERROR_BODY)
    except UpstreamError:
        raw = b""
    finally:
        await response.aclose()
    body = read_error_body(
        raw,
        response.headers.get("content-type", ""),
        response.headers.get("content-encoding"),
        provider.api_key,
    )
    status, envelope = shape(status, body)
    return UpstreamError(
        kind_for_status(status),
        f"upstream answered HTTP {response.status_code}",
        status=status,
        body=_ENCODER.encode(envelope),
        retry_after=response.headers.get("retry-after"),
    )


async def read_json_object(response: UpstreamResponse, limit: int) -> dict[str, Any]:
    """Read a whole answer (at most ``limit`` bytes) and decode it; anything but a JSON
    object is invalid."""
    try:
        raw = await read_capped(response, limit)
    finally:
        await response.aclose()
    try:
        body = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # nesting deeper than msgspec goes
        raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered invalid JSON") from exc
    if not isinstance(body, dict):
        raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered a non-object")
    return body


async def read_capped(response: UpstreamResponse, limit: int) -> bytes:
    """The whole body; past ``limit`` bytes an ``oversize`` UpstreamError, reading no more
    (the caller closes the response, and with it the connection)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise _oversize_body(limit)
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in body_chunks(response):
            size += len(chunk)
            if size > limit:
                raise _oversize_body(limit)
            parts.append(chunk)
    except TRANSPORT_ERRORS as exc:
        raise classify_transport_error(exc) from exc
    return b"".join(parts)


def _oversize_body(limit: int) -> UpstreamError:
    return UpstreamError(FailureKind.OVERSIZE, f"the upstream's answer exceeds {limit} bytes")


async def read_all(response: UpstreamResponse, limit: int | None = None) -> bytes:
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in body_chunks(response):
            parts.append(chunk)
            size += len(chunk)
            if limit is not None and size >= limit:
                break
    except TRANSPORT_ERRORS as exc:
        raise classify_transport_error(exc) from exc
    return b"".join(parts)


def classify_transport_error(exc: Exception) -> UpstreamError:
    """An aiohttp failure by its type; an httpx one by its aiohttp or asyncio cause when it
    has one (httpx-aiohttp reports most aiohttp failures as timeouts), else by its type.
    httpx is looked at only when something imported it: else no error can be one of its."""
    cause = exc if isinstance(exc, aiohttp.ClientError | TimeoutError) else exc.__cause__
    if isinstance(cause, aiohttp.ServerTimeoutError | TimeoutError):
        return UpstreamError(FailureKind.TIMEOUT, "the upstream did not answer in time")
    if isinstance(cause, aiohttp.ClientConnectionError):  # refused, reset, disconnected
        return UpstreamError(
            FailureKind.CONNECT, f"could not reach the upstream: {type(cause).__name__}"
        )
    httpx = sys.modules.get("httpx")
    if httpx is not None and isinstance(exc, httpx.TimeoutException):
        return UpstreamError(FailureKind.TIMEOUT, "the upstream did not answer in time")
    if httpx is not None and isinstance(
        exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.NetworkError
    ):
        return UpstreamError(
            FailureKind.CONNECT, f"could not reach the upstream: {type(exc).__name__}"
        )
    return UpstreamError(FailureKind.CONNECT, f"upstream transport failed: {type(exc).__name__}")


async def first_chunk(response: UpstreamResponse, chunks: AsyncIterator[bytes]) -> bytes:
    """A stream's first chunk, read before anything reaches the client: a stream that
    closes or fails first is a retryable failure (a fallback may still answer). The
    response is closed on failure."""
    try:
        return await anext(chunks)
    except StopAsyncIteration:
        await response.aclose()
        raise UpstreamError(
            FailureKind.STREAM_CUT, "upstream closed the stream before any byte", retryable=True
        ) from None
    except TRANSPORT_ERRORS as exc:
        await response.aclose()
        raise UpstreamError(
            FailureKind.STREAM_CUT,
            f"upstream stream failed before its first byte: {type(exc).__name__}",
            retryable=True,
        ) from exc
    except UpstreamError as error:
        await response.aclose()
        raise UpstreamError(error.kind, error.message, retryable=True) from error


async def relay_rest(
    first: bytes, rest: AsyncIterator[bytes], response: UpstreamResponse
) -> AsyncIterator[bytes]:
    """The stream from its first chunk on; a transport failure is a ``stream_cut``. The
    rest and the response are closed however it ends."""
    try:
        yield first
        async for chunk in rest:
            yield chunk
    except TRANSPORT_ERRORS as exc:
        raise UpstreamError(
            FailureKind.STREAM_CUT, f"upstream stream broke: {type(exc).__name__}"
        ) from exc
    finally:
        try:
            aclose = getattr(rest, "aclose", None)
            if aclose is not None:
                await aclose()
        finally:
            await response.aclose()
