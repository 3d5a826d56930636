"""One exchange with an upstream, over the client of ``gateway.upstream.http``.

``send_json`` posts a request and turns a non-2xx answer into an ``UpstreamError`` whose
body is safe to relay; ``read_json_object`` reads a whole answer within its cap;
``first_chunk`` reads a stream's first chunk while a fallback may still answer
(``opened_with_error`` when that chunk is the provider's error), and ``relay_rest``
yields the stream after it; ``classify_transport_error`` names a transport
failure by its ``FailureKind``.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import aiohttp
import msgspec

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind, kind_for_status
from gateway.domain.model import Provider
from gateway.streaming.sse import EventTooLarge
from gateway.upstream.base import UpstreamCall
from gateway.upstream.error_body import ErrorBody, openai_envelope, read_error_body, redact_json
from gateway.upstream.http import TRANSPORT_ERRORS, UpstreamHTTP, UpstreamResponse, body_chunks
from gateway.upstream.retry import kept_retry_after

MAX_ERROR_BODY = 64 * 1024
_ENCODER = msgspec.json.Encoder()


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
        retry_after=kept_retry_after(response.headers.get("retry-after")),
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


@contextlib.contextmanager
def stream_read_failures() -> Iterator[None]:
    """A translated stream's reads, their failures as the gateway's: a transport error is
    a cut stream, an event over ``server.maxUpstreamEventBytes`` an oversize one. Entered
    once a stream (no cost a read)."""
    try:
        yield
    except TRANSPORT_ERRORS as exc:
        raise UpstreamError(
            FailureKind.STREAM_CUT, f"upstream stream broke: {type(exc).__name__}"
        ) from exc
    except EventTooLarge as exc:
        raise UpstreamError(
            FailureKind.OVERSIZE, f"an upstream stream event exceeds {exc.limit} bytes"
        ) from exc


def opened_with_error(
    error: dict[str, Any], status: int | None, api_key: str | None
) -> UpstreamError:
    """A translated stream whose first event is the provider's error (nothing reached the
    client): the attempt's failure, by its status (500 when it has none), with its
    envelope redacted."""
    status = status or 500
    return UpstreamError(
        kind_for_status(status),
        "upstream stream failed at once",
        status=status,
        body=_ENCODER.encode(redact_json(error, api_key)),
    )


async def relay_rest(
    first: bytes, rest: AsyncIterator[bytes], response: UpstreamResponse
) -> AsyncIterator[bytes]:
    """The stream from its first chunk on; a transport failure is a ``stream_cut``. The
    rest and the response are closed however it ends."""
    try:
        yield first
        del first  # not kept for the stream's life
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
