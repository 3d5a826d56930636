"""Anthropic's Messages API behind the OpenAI chat API (the translation is in translate.py),
and in front of it natively (``/v1/messages``, native.py)."""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import msgspec

from gateway.domain.errors import TranslationError, UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import Endpoint
from gateway.streaming.sse import SSEDecoder, encode_event
from gateway.upstream.anthropic.errors import map_error
from gateway.upstream.anthropic.native import (
    count_native,
    native_headers,
    read_native,
    relay_native,
    send_native,
)
from gateway.upstream.anthropic.stream import StreamTranslator
from gateway.upstream.anthropic.translate import (
    MessagesRequest,
    from_messages_response,
    translate_request,
    usage_from_anthropic,
)
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.exchange import (
    first_chunk,
    opened_with_error,
    read_json_object,
    relay_rest,
    send_json,
    stream_read_failures,
)
from gateway.upstream.http import UpstreamHTTP, UpstreamResponse, body_chunks
from gateway.upstream.refusals import not_offered, refused_translation

DEFAULT_MAX_TOKENS = 4096  # when the model declares no maxOutputTokens
_ENCODER = msgspec.json.Encoder()


class AnthropicAdapter:
    def __init__(self, client: UpstreamHTTP) -> None:
        self._client = client

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        if call.endpoint is Endpoint.MESSAGES:
            return await read_native(await self._send_native(call), self._client)
        request = _translated(call)
        response = await self._send(call, request)
        message = await read_json_object(response, self._client.limits.body_bytes)
        if message.get("type") == "error":
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no message")
        body = from_messages_response(message, int(time.time()), request.response_tool)
        usage = message.get("usage")
        return UpstreamReply(
            body=body,
            usage=usage_from_anthropic(usage) if isinstance(usage, dict) else None,
            response_model=body.get("model"),
        )

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        if call.endpoint is Endpoint.MESSAGES:
            return await relay_native(await self._send_native(call), self._client, call)
        request = _translated(call)
        response = await self._send(call, request)
        translator = StreamTranslator(call.model.name, int(time.time()), request.response_tool)
        events = _translate(response, translator, self._client.limits.event_bytes)
        first = await first_chunk(response, events)
        if translator.error is not None:  # the stream opened with an error: not a byte sent
            await events.aclose()
            key = call.provider.api_key
            raise opened_with_error(translator.error, translator.error_status, key)
        return relay_rest(first, events, response)

    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]:
        """The provider's ``/messages/count_tokens`` answer (native.py)."""
        return await count_native(self._client, call)

    async def _send(self, call: UpstreamCall, request: MessagesRequest) -> UpstreamResponse:
        payload = request.payload
        if call.stream:
            payload["stream"] = True
        url = f"{call.provider.base_url.rstrip('/')}/messages"
        return await send_json(
            self._client, call, url, self._headers(call), payload, shape=map_error
        )

    async def _send_native(self, call: UpstreamCall) -> UpstreamResponse:
        """/v1/messages as the client sent it (native.py)."""
        return await send_native(self._client, call, native_headers(call))

    @staticmethod
    def _headers(call: UpstreamCall) -> dict[str, str]:
        return native_headers(call)


def _translated(call: UpstreamCall) -> MessagesRequest:
    """The Messages API request, or the 400 a client reads for what cannot be translated."""
    if call.endpoint is not Endpoint.CHAT:
        raise not_offered(
            "anthropic",
            f"The model '{call.model.id}' is served by Anthropic, which offers no "
            f"{call.endpoint.value} endpoint; use a chat model or another provider.",
        )
    try:
        request = translate_request(
            call.body, call.model.name, call.model.max_output_tokens or DEFAULT_MAX_TOKENS
        )
    except TranslationError as exc:
        raise refused_translation(exc) from exc
    for name in request.ignored:
        call.ignore(name)
    return request


async def _translate(
    response: UpstreamResponse, translator: StreamTranslator, max_event_bytes: int
) -> AsyncGenerator[bytes, None]:
    """Anthropic SSE in, OpenAI SSE out; the usage chunk and [DONE] at message_stop."""
    decoder = SSEDecoder(max_event_bytes)
    try:
        with stream_read_failures():
            async for chunk in body_chunks(response):
                for event in decoder.feed(chunk):
                    out = _translate_event(translator, event.event or "", event.data)
                    if out:
                        yield out
                    if translator.error is not None:
                        yield encode_event(_ENCODER.encode(translator.error))
                        return
                    if translator.done:
                        yield encode_event(_ENCODER.encode(_usage_chunk(translator)))
                        yield encode_event(b"[DONE]")
                        return
    finally:
        await response.aclose()


def _usage_chunk(translator: StreamTranslator) -> dict[str, Any]:
    """The usage chunk, naming cache writes as OpenRouter does so cacheWrite prices them."""
    chunk = translator.usage_chunk()
    usage = translator.usage
    if usage is not None and usage.cache_write_tokens:
        chunk["usage"]["prompt_tokens_details"]["cache_write_tokens"] = usage.cache_write_tokens
    return chunk


def _translate_event(translator: StreamTranslator, name: str, data: str) -> bytes:
    """An event whose data is no JSON object is unusable: the stream cannot go on as if
    nothing was lost (before the first byte a fallback may still answer)."""
    try:
        payload: Any = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        payload = None
    if not isinstance(payload, dict):
        raise UpstreamError(
            FailureKind.INVALID_RESPONSE, "upstream sent an event that is not a JSON object"
        )
    chunks = translator.feed(name or str(payload.get("type", "")), payload)
    return b"".join(encode_event(_ENCODER.encode(c)) for c in chunks)
