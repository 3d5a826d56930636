"""``/v1/messages`` to an Anthropic provider, native: the client's body goes as it was sent
(``model`` replaced by the model's name), with the client's ``anthropic-version`` and
``anthropic-beta`` headers (the provider's version when the client sends none); the answer
comes back as it is, its usage read from ``usage``, and a stream is relayed event by event
(the pipeline's relay reads its usage from ``message_start`` and ``message_delta``).

A stream whose first event is an ``error`` fails the attempt before a byte reaches the
client, so an overloaded provider can still be retried or fallen back from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind, kind_for_status
from gateway.streaming.sse import EventTooLarge, SSEDecoder
from gateway.upstream.anthropic.errors import STATUS_BY_ERROR_TYPE, map_error, parse_error
from gateway.upstream.anthropic.translate import usage_from_anthropic
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.error_body import redact_json
from gateway.upstream.exchange import first_chunk, read_json_object, relay_rest, send_json
from gateway.upstream.http import UpstreamHTTP, UpstreamResponse, body_chunks

_ENCODER = msgspec.json.Encoder()
DEFAULT_VERSION = "2023-06-01"


def native_payload(call: UpstreamCall) -> dict[str, Any]:
    payload = dict(call.body)
    payload["model"] = call.model.name
    return payload


async def send_native(
    client: UpstreamHTTP, call: UpstreamCall, headers: dict[str, str]
) -> UpstreamResponse:
    url = f"{call.provider.base_url.rstrip('/')}/messages"
    return await send_json(client, call, url, headers, native_payload(call), shape=map_error)


async def read_native(response: UpstreamResponse, client: UpstreamHTTP) -> UpstreamReply:
    """A whole native answer: the message as it came, its usage read."""
    message = await read_json_object(response, client.limits.body_bytes)
    if message.get("type") != "message":
        raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no message")
    usage = message.get("usage")
    model = message.get("model")
    return UpstreamReply(
        body=message,
        usage=usage_from_anthropic(usage) if isinstance(usage, dict) else None,
        response_model=model if isinstance(model, str) else None,
    )


async def relay_native(
    response: UpstreamResponse, client: UpstreamHTTP, call: UpstreamCall
) -> AsyncIterator[bytes]:
    """A native stream, relayed as it comes once its first chunk is read and is no error."""
    if response.headers.get("content-encoding", "identity").lower() != "identity":
        await response.aclose()
        raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream compressed its stream unasked")
    chunks = body_chunks(response)
    first = await first_chunk(response, chunks)
    failure = _opening_error(first, client.limits.event_bytes, call.provider.api_key)
    if failure is not None:
        await response.aclose()
        raise failure
    return relay_rest(first, chunks, response)


def _opening_error(first: bytes, max_event_bytes: int, api_key: str | None) -> UpstreamError | None:
    """The failure a stream opening with an ``error`` event is (its status by its type)."""
    try:
        events = SSEDecoder(max_event_bytes).feed(first)
    except EventTooLarge:
        return None  # the relay's decoder reports it
    if not events or events[0].event != "error":
        return None
    try:
        data: Any = msgspec.json.decode(events[0].data)
    except (msgspec.DecodeError, RecursionError):
        data = None
    kind, message = parse_error(data)
    status = STATUS_BY_ERROR_TYPE.get(kind or "", 500)
    body = data if isinstance(data, dict) else {"type": "error", "error": {"type": "api_error"}}
    return UpstreamError(
        kind_for_status(status),
        f"upstream stream failed at once: {message or kind or 'error'}",
        status=status,
        body=_ENCODER.encode(redact_json(body, api_key)),
    )


async def count_native(client: UpstreamHTTP, call: UpstreamCall) -> dict[str, Any]:
    """The provider's ``/messages/count_tokens`` answer (``{"input_tokens": n}``)."""
    url = f"{call.provider.base_url.rstrip('/')}/messages/count_tokens"
    payload = native_payload(call)
    payload.pop("stream", None)
    response = await send_json(client, call, url, native_headers(call), payload, shape=map_error)
    counted = await read_json_object(response, client.limits.body_bytes)
    if not isinstance(counted.get("input_tokens"), int):
        raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no input_tokens")
    return counted


def native_headers(call: UpstreamCall) -> dict[str, str]:
    """Anthropic's headers: the provider's key and version; the client's forwarded
    anthropic-version and anthropic-beta (in ``call.headers``) take precedence."""
    headers = {
        "content-type": "application/json",
        "accept-encoding": "identity",
        "anthropic-version": call.provider.api_version or DEFAULT_VERSION,
    }
    if call.provider.api_key:
        headers["x-api-key"] = call.provider.api_key
    headers.update(call.headers)
    return headers
