"""AWS Bedrock Runtime behind the OpenAI API: Converse and ConverseStream for chat,
InvokeModel for Titan and Cohere embeddings (the translation is in translate.py,
embeddings.py and stream.py; signing in auth.py); and in front of Anthropic's Messages
API for Claude, natively: InvokeModel and InvokeModelWithResponseStream with the client's
body (native.py), the stream's chunks relayed as Anthropic's events."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import functools
import importlib
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any
from urllib.parse import quote

import msgspec

from gateway.domain.errors import TranslationError, UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import Endpoint, Provider
from gateway.domain.usage import Usage
from gateway.messages.errors import error_type_for
from gateway.streaming.sse import encode_event
from gateway.upstream.anthropic.errors import STATUS_BY_ERROR_TYPE, parse_error
from gateway.upstream.anthropic.native import read_native
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.bedrock import embeddings
from gateway.upstream.bedrock.auth import Authorizer, BearerKey, SigV4
from gateway.upstream.bedrock.errors import map_error, stream_exception
from gateway.upstream.bedrock.events import BadFrame, Frame, FrameDecoder
from gateway.upstream.bedrock.native import (
    chunk_event,
    count_body,
    native_body,
    natively_claude,
)
from gateway.upstream.bedrock.stream import StreamTranslator
from gateway.upstream.bedrock.translate import (
    ConverseRequest,
    completion_id,
    from_converse_response,
    translate_request,
    usage_from_bedrock,
)
from gateway.upstream.exchange import (
    classify_transport_error,
    first_chunk,
    http_error,
    opened_with_error,
    read_json_object,
    relay_rest,
    stream_read_failures,
    timeout_for,
)
from gateway.upstream.gemini.completions import chat_to_completion, completion_to_chat
from gateway.upstream.http import TRANSPORT_ERRORS, UpstreamHTTP, UpstreamResponse, body_chunks
from gateway.upstream.refusals import not_offered, refused_translation

EVENT_STREAM = "application/vnd.amazon.eventstream"
EMBED_CONCURRENCY = 4  # Titan calls of one embeddings request in flight at once
_ENCODER = msgspec.json.Encoder()


class BedrockAdapter:
    def __init__(self, client: UpstreamHTTP) -> None:
        self._client = client
        # One authorizer a provider (and its credentials), made on its first call.
        self._authorizers: dict[tuple[str, str | None, str | None], Authorizer] = {}
        self._decoder_loaded = False

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        if call.endpoint is Endpoint.EMBEDDINGS:
            return await self._embed(call)
        if native(call):
            native_call, payload = _native(call)
            response = await self._send(native_call, "invoke", payload, accept="application/json")
            return await read_native(response, self._client)
        request = _translated(call)
        response = await self._send(call, "converse", request.payload, accept="application/json")
        request_id = response.headers.get("x-amzn-requestid")
        answer = await read_json_object(response, self._client.limits.body_bytes)
        if not isinstance(answer.get("output"), dict):
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no message")
        body = from_converse_response(
            answer, call.model.name, int(time.time()), request_id, request.response_tool
        )
        if call.endpoint is Endpoint.COMPLETIONS:
            body = chat_to_completion(body)
        return UpstreamReply(
            body=body, usage=usage_from_bedrock(answer.get("usage")), response_model=call.model.name
        )

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        if native(call):
            return await self._native_stream(call)
        request = _translated(call)
        await self._load_decoder()
        response = await self._send(call, "converse-stream", request.payload, accept=EVENT_STREAM)
        chunk_id = completion_id(response.headers.get("x-amzn-requestid"))
        translator = StreamTranslator(
            call.model.name, int(time.time()), chunk_id, request.response_tool
        )
        failure: list[tuple[int, dict[str, Any]]] = []
        legacy = call.endpoint is Endpoint.COMPLETIONS
        limit = self._client.limits.event_bytes
        events = _translate(response, translator, failure, limit, legacy)
        first = await first_chunk(response, events)
        if failure:  # the stream opened with an exception: not a byte sent yet
            await events.aclose()
            status, error = failure[0]
            raise opened_with_error(error, status, call.provider.api_key)
        return relay_rest(first, events, response)

    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]:
        """CountTokens (``/model/{id}/count-tokens``) for a Messages body to Claude, as
        Anthropic's ``{"input_tokens": n}``."""
        kept = {k: v for k, v in call.headers.items() if not k.startswith("anthropic-")}
        payload = count_body(call.body, call.headers, call.provider.api_version)
        native_call = dataclasses.replace(call, headers=kept)
        response = await self._send(native_call, "count-tokens", payload, accept="application/json")
        answer = await read_json_object(response, self._client.limits.body_bytes)
        tokens = answer.get("inputTokens")
        if not isinstance(tokens, int) or isinstance(tokens, bool):
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no inputTokens")
        return {"input_tokens": tokens}

    async def _load_decoder(self) -> None:
        if not self._decoder_loaded:  # botocore's decoder imported once, off the event loop
            await asyncio.to_thread(importlib.import_module, "botocore.eventstream")
            self._decoder_loaded = True

    async def _native_stream(self, call: UpstreamCall) -> AsyncIterator[bytes]:
        """InvokeModelWithResponseStream, its chunks relayed as Anthropic's SSE events; a
        stream that opens with an exception (or an ``error`` event) fails the attempt
        before a byte reaches the client."""
        native_call, payload = _native(call)
        await self._load_decoder()
        response = await self._send(
            native_call, "invoke-with-response-stream", payload, accept=EVENT_STREAM
        )
        failure: list[tuple[int, dict[str, Any]]] = []
        events = _relay_chunks(response, failure, self._client.limits.event_bytes)
        first = await first_chunk(response, events)
        if failure:
            await events.aclose()
            status, error = failure[0]
            raise opened_with_error(error, status, call.provider.api_key)
        return relay_rest(first, events, response)

    async def _embed(self, call: UpstreamCall) -> UpstreamReply:
        try:
            family = embeddings.family(call.model.name)
            texts = embeddings.inputs(call.body)
            encoding = embeddings.encoding(call.body)
            if family == "titan":
                bodies = embeddings.titan_bodies(call.body, texts)
            else:
                bodies = embeddings.cohere_bodies(call.body, texts)
        except TranslationError as exc:
            raise refused_translation(exc) from exc
        # Titan takes one text a call: a few at a time, the answers kept in input order.
        gate = asyncio.Semaphore(EMBED_CONCURRENCY)

        async def invoke(payload: dict[str, Any]) -> tuple[list[list[float]], int]:
            async with gate:
                return await self._invoke_embedding(call, payload, family)

        answers = await asyncio.gather(*(invoke(payload) for payload in bodies))
        vectors = [vector for found, _ in answers for vector in found]
        if len(vectors) != len(texts):
            raise UpstreamError(
                FailureKind.INVALID_RESPONSE, "upstream answered another number of embeddings"
            )
        tokens = sum(count for _, count in answers)
        body = embeddings.openai_embeddings(vectors, call.model.name, tokens, encoding)
        usage = Usage(input_tokens=tokens, output_tokens=0)
        return UpstreamReply(body=body, usage=usage, response_model=call.model.name)

    async def _invoke_embedding(
        self, call: UpstreamCall, payload: dict[str, Any], family: str
    ) -> tuple[list[list[float]], int]:
        """One InvokeModel: its vectors, and its token count (Titan's body, else the
        ``X-Amzn-Bedrock-Input-Token-Count`` header)."""
        response = await self._send(call, "invoke", payload, accept="application/json")
        header = response.headers.get("x-amzn-bedrock-input-token-count", "")
        answer = await read_json_object(response, self._client.limits.body_bytes)
        found = _vectors(answer, family)
        if found is None:
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no embedding")
        count = answer.get("inputTextTokenCount")
        if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
            return found, count
        return found, int(header) if header.isdigit() else 0

    async def _send(
        self, call: UpstreamCall, operation: str, payload: dict[str, Any], *, accept: str
    ) -> UpstreamResponse:
        """POST to ``/model/{modelId}/{operation}``, signed; a non-2xx as UpstreamError."""
        url = model_url(call.provider.base_url, call.model.name, operation)
        content = _ENCODER.encode(payload)
        headers = {"content-type": "application/json", "accept": accept}
        if accept != EVENT_STREAM:
            headers["accept-encoding"] = "identity"
        headers = await self._authorizer(call.provider).headers(url, content, headers)
        headers.update(call.headers)  # after signing: x-request-id, traceparent go unsigned
        timeout = timeout_for(call.provider.timeout_seconds, call.remaining_seconds)
        try:
            response = await self._client.post(url, headers, content, timeout)
        except TRANSPORT_ERRORS as exc:
            raise classify_transport_error(exc) from exc
        if response.status_code < 300:
            return response
        shape = functools.partial(map_error, error_type=response.headers.get("x-amzn-errortype"))
        raise await http_error(response, call.provider, shape)

    def _authorizer(self, provider: Provider) -> Authorizer:
        key = (provider.id, provider.region, provider.api_key)
        authorizer = self._authorizers.get(key)
        if authorizer is None:
            if provider.api_key:
                authorizer = BearerKey(provider.api_key)
            else:
                authorizer = SigV4(provider.region or "us-east-1")
            self._authorizers[key] = authorizer
        return authorizer


def model_url(base_url: str, model_id: str, operation: str) -> str:
    """The model id as one path segment (an inference-profile ARN's '/' escaped; ':' kept
    as the HTTP client sends it, so the signed path is the path sent)."""
    return f"{base_url.rstrip('/')}/model/{quote(model_id, safe=':')}/{operation}"


def native(call: UpstreamCall) -> bool:
    """/v1/messages to a Claude model: the body goes natively (native.py)."""
    return call.endpoint is Endpoint.MESSAGES and natively_claude(call.model.name)


def _native(call: UpstreamCall) -> tuple[UpstreamCall, dict[str, Any]]:
    """The call less Anthropic's headers (Bedrock takes the version and betas in the
    body), and the body."""
    payload = native_body(call.body, call.headers, call.provider.api_version)
    kept = {k: v for k, v in call.headers.items() if not k.startswith("anthropic-")}
    return dataclasses.replace(call, headers=kept), payload


async def _relay_chunks(
    response: UpstreamResponse,
    failure: list[tuple[int, dict[str, Any]]],
    max_event_bytes: int,
) -> AsyncGenerator[bytes, None]:
    """Event-stream frames in, Anthropic's SSE out, one event a chunk, until
    ``message_stop``. An exception frame (or an ``error`` event) is put in ``failure`` and
    ends the stream with Anthropic's ``error`` event; a stream that ends before
    ``message_stop`` is cut."""
    async with contextlib.aclosing(_frames(response, max_event_bytes)) as reads:
        async for frames in reads:
            out: list[bytes] = []
            for frame in frames:
                payload = _payload(frame.payload)
                if frame.message_type != "event":
                    status, error = stream_exception(frame.name, payload)
                    message = str(error["error"]["message"])
                    failure.append((status, _anthropic_error(status, message)))
                    yield b"".join(out) + encode_event(_ENCODER.encode(failure[0][1]), "error")
                    return
                if frame.name != "chunk":
                    continue
                event = chunk_event(payload)
                if event is None:
                    raise UpstreamError(
                        FailureKind.INVALID_RESPONSE,
                        "upstream sent a chunk that is no Anthropic event",
                    )
                kind = str(event["type"])
                if kind == "error":
                    name, _ = parse_error(event)
                    status = STATUS_BY_ERROR_TYPE.get(name or "", 500)
                    failure.append((status, event))
                out.append(encode_event(_ENCODER.encode(event), kind))
                if kind in ("message_stop", "error"):
                    yield b"".join(out)
                    return
            if out:
                yield b"".join(out)
        raise UpstreamError(FailureKind.STREAM_CUT, "upstream stream ended before message_stop")


def _anthropic_error(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type_for(status), "message": message}}


def _vectors(answer: dict[str, Any], family: str) -> list[list[float]] | None:
    if family == "titan":
        one = embeddings.vector(answer.get("embedding"))
        return None if one is None else [one]
    raw = answer.get("embeddings")
    if isinstance(raw, dict):  # embedding_types asked: {"float": [[...]]}
        raw = raw.get("float")
    if not isinstance(raw, list):
        return None
    found = [embeddings.vector(v) for v in raw]
    return None if any(v is None for v in found) else [v for v in found if v is not None]


def _translated(call: UpstreamCall) -> ConverseRequest:
    if call.endpoint not in (Endpoint.CHAT, Endpoint.COMPLETIONS):
        raise not_offered(  # /v1/responses reaches here as chat (the bridge)
            "bedrock",
            f"The model '{call.model.id}' is served by AWS Bedrock, where the gateway "
            f"translates chat, completions and embeddings, not {call.endpoint.value}.",
        )
    try:
        body = call.body
        if call.endpoint is Endpoint.COMPLETIONS:  # the prompt as one user message
            body = completion_to_chat(body, "AWS Bedrock")
        request = translate_request(body, call.model.name, call.model.max_output_tokens)
    except TranslationError as exc:
        raise refused_translation(exc) from exc
    for name in request.ignored:
        call.ignore(name)
    return request


async def _translate(
    response: UpstreamResponse,
    translator: StreamTranslator,
    failure: list[tuple[int, dict[str, Any]]],
    max_event_bytes: int,
    legacy: bool = False,
) -> AsyncGenerator[bytes, None]:
    """Event-stream frames in, OpenAI SSE out (``legacy``: text_completion chunks); the
    usage chunk and [DONE] after ``metadata``. An exception frame ends the stream with an
    error event; a stream that ends before ``metadata`` is cut."""
    async with contextlib.aclosing(_frames(response, max_event_bytes)) as reads:
        async for frames in reads:
            for frame in frames:
                data = _payload(frame.payload)
                if frame.message_type != "event":
                    failure.append(stream_exception(frame.name, data))
                    yield encode_event(_ENCODER.encode(failure[0][1]))
                    return
                out = translator.feed(frame.name, data)
                if legacy:
                    out = [chat_to_completion(c) for c in out]
                if out:
                    yield b"".join(encode_event(_ENCODER.encode(c)) for c in out)
                if translator.done:
                    usage = translator.usage_chunk()
                    usage = chat_to_completion(usage) if legacy else usage
                    yield encode_event(_ENCODER.encode(usage))
                    yield encode_event(b"[DONE]")
                    return
        raise UpstreamError(FailureKind.STREAM_CUT, "upstream stream ended before its metadata")


async def _frames(
    response: UpstreamResponse, max_event_bytes: int
) -> AsyncGenerator[list[Frame], None]:
    """The frames of each read of an event stream, its read and frame failures as the
    gateway's; the response closed when the reader stops."""
    decoder = FrameDecoder(max_event_bytes)
    try:
        with stream_read_failures():  # a frame too large is an event too large
            async for chunk in body_chunks(response):
                yield list(decoder.feed(chunk))  # decoded here: its failures mapped here
    except BadFrame as exc:
        raise UpstreamError(
            FailureKind.INVALID_RESPONSE, f"upstream sent an undecodable event frame: {exc}"
        ) from exc
    finally:
        await response.aclose()


def _payload(raw: bytes) -> dict[str, Any]:
    """A frame's JSON payload; anything but an object is unusable."""
    try:
        data: Any = msgspec.json.decode(raw) if raw else {}
    except (msgspec.DecodeError, RecursionError):
        data = None
    if not isinstance(data, dict):
        raise UpstreamError(
            FailureKind.INVALID_RESPONSE, "upstream sent an event that is not a JSON object"
        )
    return data
