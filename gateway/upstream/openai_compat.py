"""Every OpenAI-compatible upstream: openai, ollama, openrouter, groq, together,
mistral, custom (base URL + bearer key), and Azure OpenAI as a variant of it."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

import aiohttp
import httpx
import msgspec

from gateway.domain.model import Provider
from gateway.inbound import Endpoint
from gateway.upstream.base import UpstreamCall, UpstreamError, UpstreamReply, kind_for_status
from gateway.upstream.error_body import ErrorBody, openai_envelope, read_error_body
from gateway.upstream.http import UpstreamHTTP, body_chunks, parse_url, timeout_for
from gateway.usage.openai_usage import usage_from_openai, usage_from_responses

MAX_ERROR_BODY = 64 * 1024
_ENCODER = msgspec.json.Encoder()


class OpenAICompatAdapter:
    def __init__(self, client: UpstreamHTTP) -> None:
        self._client = client

    def url(self, call: UpstreamCall) -> str:
        return f"{call.provider.base_url.rstrip('/')}/{call.endpoint.value}"

    def headers(self, call: UpstreamCall) -> dict[str, str]:
        headers = {
            "content-type": "application/json",
            "accept-encoding": "identity",
            **bearer(call.provider.api_key),
        }
        headers.update(call.headers)
        return headers

    def payload(self, call: UpstreamCall, ask_usage: bool) -> dict[str, Any]:
        body = dict(call.body)
        body["model"] = call.model.name
        # The Responses API reports usage in its last event unasked (and has no such option).
        responses = call.endpoint is Endpoint.RESPONSES
        if call.stream and ask_usage and call.provider.stream_usage and not responses:
            options = body.get("stream_options")
            body["stream_options"] = {**(options if isinstance(options, dict) else {})}
            body["stream_options"]["include_usage"] = True
        return body

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        response = await self._send(call, ask_usage=False)
        body = await read_json_object(response, self._client.limits.body_bytes)
        if call.endpoint is Endpoint.RESPONSES:
            return _responses_reply(body)
        if "error" in body and "choices" not in body and "data" not in body:
            # Some upstreams report a failure after a 200 (it was sent before the work began).
            raise UpstreamError("invalid_response", "upstream answered an error with a 2xx status")
        model = body.get("model")
        return UpstreamReply(
            body=body,
            usage=usage_from_openai(body.get("usage")),
            response_model=model if isinstance(model, str) else None,
        )

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        response = await self._send(call, ask_usage=ask_usage)
        if response.headers.get("content-encoding", "identity").lower() != "identity":
            # Relayed as it is, a compressed stream would reach the client as garbage.
            await response.aclose()
            raise UpstreamError("invalid_response", "upstream compressed its stream unasked")
        chunks = body_chunks(response)
        try:
            first = await anext(chunks)
        except StopAsyncIteration:
            await response.aclose()
            raise UpstreamError(
                "stream_cut", "upstream closed the stream before any byte", retryable=True
            ) from None
        except (httpx.HTTPError, aiohttp.ClientError) as exc:
            await response.aclose()
            raise UpstreamError(
                "stream_cut",
                f"upstream stream failed before its first byte: {type(exc).__name__}",
                retryable=True,
            ) from exc
        return _relay(first, chunks, response)

    async def _send(self, call: UpstreamCall, ask_usage: bool) -> httpx.Response:
        return await send_json(
            self._client, call, self.url(call), self.headers(call), self.payload(call, ask_usage)
        )


def _responses_reply(body: dict[str, Any]) -> UpstreamReply:
    """A native ``Response``; one that failed (``error`` set) or has no ``output`` is
    unusable, like a chat answer without choices."""
    if body.get("error") is not None or not isinstance(body.get("output"), list):
        raise UpstreamError("invalid_response", "upstream answered no usable response")
    model = body.get("model")
    return UpstreamReply(
        body=body,
        usage=usage_from_responses(body.get("usage")),
        response_model=model if isinstance(model, str) else None,
    )


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
) -> httpx.Response:
    """POST a JSON body; a 2xx response comes back unread, anything else as UpstreamError."""
    timeout = timeout_for(call.provider.timeout_seconds, call.remaining_seconds)
    try:
        response = await client.post(parse_url(url), headers, _ENCODER.encode(payload), timeout)
    except (httpx.HTTPError, aiohttp.ClientError) as exc:
        raise classify_transport_error(exc) from exc
    if response.status_code < 300:
        return response
    raise await http_error(response, call.provider, shape)


async def http_error(
    response: httpx.Response, provider: Provider, shape: ErrorShape
) -> UpstreamError:
    """A non-2xx answer as an UpstreamError whose body is an envelope safe to relay.

    A redirect (never followed) and a refusal of the gateway's credentials end as the
    gateway's own errors: their bodies are never read, let alone relayed.
    """
    status = response.status_code
    kind = kind_for_status(status)
    if kind == "invalid_response":
        await response.aclose()
        message = f"upstream answered a redirect (HTTP {status}), which is not followed"
        return UpstreamError(kind, message)
    if kind == "auth_rejected":
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


@functools.lru_cache(maxsize=256)
def bearer(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}


async def _relay(
    first: bytes, chunks: AsyncIterator[bytes], response: httpx.Response
) -> AsyncIterator[bytes]:
    try:
        yield first
        async for chunk in chunks:
            yield chunk
    except (httpx.HTTPError, aiohttp.ClientError) as exc:
        raise UpstreamError("stream_cut", f"upstream stream broke: {type(exc).__name__}") from exc
    finally:
        await response.aclose()


async def read_json_object(response: httpx.Response, limit: int) -> dict[str, Any]:
    """Read a whole answer (at most ``limit`` bytes) and decode it; anything but a JSON
    object is invalid."""
    try:
        raw = await read_capped(response, limit)
    finally:
        await response.aclose()
    try:
        body = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError) as exc:  # nesting deeper than msgspec goes
        raise UpstreamError("invalid_response", "upstream answered invalid JSON") from exc
    if not isinstance(body, dict):
        raise UpstreamError("invalid_response", "upstream answered a non-object")
    return body


async def read_capped(response: httpx.Response, limit: int) -> bytes:
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
    except (httpx.HTTPError, aiohttp.ClientError) as exc:
        raise classify_transport_error(exc) from exc
    return b"".join(parts)


def _oversize_body(limit: int) -> UpstreamError:
    return UpstreamError("oversize", f"the upstream's answer exceeds {limit} bytes")


async def read_all(response: httpx.Response, limit: int | None = None) -> bytes:
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in body_chunks(response):
            parts.append(chunk)
            size += len(chunk)
            if limit is not None and size >= limit:
                break
    except (httpx.HTTPError, aiohttp.ClientError) as exc:
        raise classify_transport_error(exc) from exc
    return b"".join(parts)


def classify_transport_error(exc: Exception) -> UpstreamError:
    """httpx-aiohttp maps every aiohttp connection error to a timeout; look at the cause."""
    cause = exc if isinstance(exc, aiohttp.ClientError) else exc.__cause__
    if isinstance(cause, aiohttp.ServerTimeoutError | TimeoutError):
        return UpstreamError("timeout", "the upstream did not answer in time")
    if isinstance(cause, aiohttp.ClientConnectionError):  # refused, reset, disconnected
        return UpstreamError("connect", f"could not reach the upstream: {type(cause).__name__}")
    if isinstance(exc, httpx.TimeoutException):
        return UpstreamError("timeout", "the upstream did not answer in time")
    if isinstance(exc, httpx.ConnectError | httpx.RemoteProtocolError | httpx.NetworkError):
        return UpstreamError("connect", f"could not reach the upstream: {type(exc).__name__}")
    return UpstreamError("connect", f"upstream transport failed: {type(exc).__name__}")


class AzureOpenAIAdapter(OpenAICompatAdapter):
    """Deployment URL, ``api-version`` query, ``api-key`` header.

    The model's ``name`` is the deployment."""

    def url(self, call: UpstreamCall) -> str:
        base = call.provider.base_url.rstrip("/")
        if call.endpoint is Endpoint.RESPONSES:  # no deployment in the path: it is `model`
            return f"{base}/openai/responses?api-version={call.provider.api_version}"
        return (
            f"{base}/openai/deployments/{call.model.name}/{call.endpoint.value}"
            f"?api-version={call.provider.api_version}"
        )

    def headers(self, call: UpstreamCall) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if call.provider.api_key:
            headers["api-key"] = call.provider.api_key
        headers.update(call.headers)
        return headers
