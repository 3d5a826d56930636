"""The Gemini API (Google AI Studio) behind the OpenAI API (the translation is pure, in
translate.py, answer.py, stream.py and embeddings.py; this is the I/O).

``{baseUrl}/models/{name}:generateContent``, ``:streamGenerateContent?alt=sse`` and
``:batchEmbedContents``, the key in ``x-goog-api-key`` (never in the URL, where logs and
proxies would keep it).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import msgspec

from gateway.domain.errors import TranslationError, UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import Endpoint
from gateway.streaming.sse import SSEDecoder, encode_event
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.error_body import ErrorBody
from gateway.upstream.exchange import (
    first_chunk,
    opened_with_error,
    read_json_object,
    relay_rest,
    send_json,
    stream_read_failures,
)
from gateway.upstream.gemini.answer import from_gemini_response
from gateway.upstream.gemini.completions import chat_to_completion, completion_to_chat
from gateway.upstream.gemini.embeddings import embed_request, from_embed_response
from gateway.upstream.gemini.errors import map_error, retry_delay
from gateway.upstream.gemini.stream import StreamTranslator
from gateway.upstream.gemini.translate import translate_request
from gateway.upstream.http import UpstreamHTTP, UpstreamResponse, body_chunks
from gateway.upstream.refusals import not_offered, refused_translation
from gateway.usage.openai_usage import usage_from_openai

DEFAULT_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
_ENCODER = msgspec.json.Encoder()


class GeminiAdapter:
    def __init__(self, client: UpstreamHTTP) -> None:
        self._client = client

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        if call.endpoint is Endpoint.EMBEDDINGS:
            return await self._embed(call)
        payload = _translated(call)
        response = await self._send(call, "generateContent", payload)
        answer = await read_json_object(response, self._client.limits.body_bytes)
        if "error" in answer and "candidates" not in answer:
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered an error")
        body = from_gemini_response(
            answer, call.model.name, int(time.time()), _single_call(call.body)
        )
        if call.endpoint is Endpoint.COMPLETIONS:
            body = chat_to_completion(body)
        return UpstreamReply(
            body=body, usage=usage_from_openai(body["usage"]), response_model=body["model"]
        )

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        payload = _translated(call)
        response = await self._send(call, "streamGenerateContent?alt=sse", payload)
        translator = StreamTranslator(call.model.name, int(time.time()), _single_call(call.body))
        legacy = call.endpoint is Endpoint.COMPLETIONS
        events = _translate(response, translator, self._client.limits.event_bytes, legacy)
        first = await first_chunk(response, events)
        if translator.error is not None:  # the stream opened with an error: not a byte sent
            await events.aclose()
            key = call.provider.api_key
            raise opened_with_error(translator.error, translator.error_status, key)
        return relay_rest(first, events, response)

    async def _embed(self, call: UpstreamCall) -> UpstreamReply:
        payload = _translated(call)
        response = await self._send(call, "batchEmbedContents", payload)
        answer = await read_json_object(response, self._client.limits.body_bytes)
        body = from_embed_response(answer, call.model.name, call.body.get("encoding_format"))
        if body is None:
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no embeddings")
        return UpstreamReply(
            body=body, usage=usage_from_openai(body.get("usage")), response_model=None
        )

    def url(self, call: UpstreamCall, method: str) -> str:
        name = call.model.name.removeprefix("models/")
        return f"{(call.provider.base_url or DEFAULT_BASE_URL).rstrip('/')}/models/{name}:{method}"

    async def headers(self, call: UpstreamCall) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if call.provider.api_key:
            headers["x-goog-api-key"] = call.provider.api_key
        headers.update(call.headers)
        return headers

    async def _send(
        self, call: UpstreamCall, method: str, payload: dict[str, Any]
    ) -> UpstreamResponse:
        return await send_google(
            self._client, call, self.url(call, method), await self.headers(call), payload
        )


async def send_google(
    client: UpstreamHTTP,
    call: UpstreamCall,
    url: str,
    headers: dict[str, str],
    payload: dict[str, Any],
) -> UpstreamResponse:
    """POST to a Google API: its errors as OpenAI envelopes, RetryInfo as Retry-After."""
    asked: list[str] = []  # RetryInfo's delay, when the error body gives one

    def shape(status: int, body: ErrorBody) -> tuple[int, dict[str, Any]]:
        delay = retry_delay(body.data) if body.is_json else None
        if delay is not None:
            asked.append(delay)
        return map_error(status, body)

    try:
        return await send_json(client, call, url, headers, payload, shape=shape)
    except UpstreamError as error:
        if error.retry_after is None and asked:
            error.retry_after = asked[0]
        raise


def _single_call(body: dict[str, Any]) -> bool:
    return body.get("parallel_tool_calls") is False


def _translated(call: UpstreamCall) -> dict[str, Any]:
    """The Gemini request, or the 400 a client reads for what cannot be translated."""
    if call.endpoint is Endpoint.RESPONSES:  # the bridge translates it to chat first
        raise not_offered("gemini", "the Responses API reaches Gemini as chat")
    try:
        if call.endpoint is Endpoint.EMBEDDINGS:
            return embed_request(call.body, call.model.name)
        if call.endpoint is Endpoint.COMPLETIONS:
            return translate_request(completion_to_chat(call.body), call.model.name)
        payload = translate_request(call.body, call.model.name)
    except TranslationError as exc:
        raise refused_translation(exc) from exc
    if call.body.get("verbosity") is not None:
        call.ignore("verbosity")  # style only: Gemini has no such setting
    return payload


async def _translate(
    response: UpstreamResponse,
    translator: StreamTranslator,
    max_event_bytes: int,
    legacy: bool = False,
) -> AsyncGenerator[bytes, None]:
    """Gemini SSE in, OpenAI SSE out; the usage chunk and [DONE] once the answer is done."""
    decoder = SSEDecoder(max_event_bytes)
    try:
        with stream_read_failures():
            async for chunk in body_chunks(response):
                for event in decoder.feed(chunk):
                    out = _translate_event(translator, event.data, legacy)
                    if out:
                        yield out
                    if translator.error is not None:
                        yield encode_event(_ENCODER.encode(translator.error))
                        return
        if not translator.done:
            raise UpstreamError(
                FailureKind.STREAM_CUT, "upstream stream ended before the answer's finishReason"
            )
        usage = translator.usage_chunk()
        yield encode_event(_ENCODER.encode(chat_to_completion(usage) if legacy else usage))
        yield encode_event(b"[DONE]")
    finally:
        await response.aclose()


def _translate_event(translator: StreamTranslator, data: str, legacy: bool) -> bytes:
    try:
        payload: Any = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError):
        payload = None
    if not isinstance(payload, dict):
        raise UpstreamError(
            FailureKind.INVALID_RESPONSE, "upstream sent an event that is not a JSON object"
        )
    chunks = translator.feed(payload)
    if legacy:  # /v1/completions: text chunks, the role-only opening one left out
        chunks = [chat_to_completion(c) for c in chunks if _says_something(c)]
    return b"".join(encode_event(_ENCODER.encode(c)) for c in chunks)


def _says_something(chunk: dict[str, Any]) -> bool:
    choices = chunk.get("choices") or []
    return any(
        (c.get("delta") or {}).get("content")
        or (c.get("delta") or {}).get("refusal")
        or c.get("finish_reason")
        for c in choices
    )
