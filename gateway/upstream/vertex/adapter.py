"""Vertex AI behind the OpenAI API: Gemini models through the Gemini translation, Claude
models through the Anthropic one (the translations are pure; this is the I/O).

Gemini: ``publishers/google/models/{name}:generateContent``,
``:streamGenerateContent?alt=sse``, embeddings through ``:predict``. Claude:
``publishers/anthropic/models/{name}:rawPredict`` / ``:streamRawPredict`` with the
Messages API body less ``model`` (it is in the URL) plus ``anthropic_version``
(``providers[].apiVersion``, default ``vertex-2023-10-16``); ``/v1/messages`` goes to
Claude natively so (docs/messages.md). Every request carries
``Authorization: Bearer`` with the provider's access token (auth.py).
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from typing import Any

from gateway.domain.errors import TranslationError, UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import Provider
from gateway.upstream.anthropic import AnthropicAdapter
from gateway.upstream.anthropic.errors import map_error as anthropic_error
from gateway.upstream.anthropic.translate import MessagesRequest
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.error_body import ErrorBody
from gateway.upstream.exchange import read_json_object, send_json
from gateway.upstream.gemini import GeminiAdapter
from gateway.upstream.gemini.adapter import send_google
from gateway.upstream.gemini.errors import map_error as google_error
from gateway.upstream.http import UpstreamHTTP, UpstreamResponse
from gateway.upstream.refusals import refused_translation
from gateway.upstream.vertex.auth import TokenSource
from gateway.upstream.vertex.embeddings import from_predict_response, predict_request
from gateway.upstream.vertex.urls import ANTHROPIC, count_url, model_url, publisher
from gateway.usage.openai_usage import usage_from_openai


class Tokens:
    """One TokenSource per provider and credentials file, made on its first call."""

    def __init__(self) -> None:
        self._sources: dict[tuple[str, str | None], TokenSource] = {}

    def source(self, provider: Provider) -> TokenSource:
        key = (provider.id, provider.credentials_file)
        found = self._sources.get(key)
        if found is None:
            found = self._sources[key] = TokenSource(provider.credentials_file)
        return found

    async def headers(self, call: UpstreamCall) -> dict[str, str]:
        token = await self.source(call.provider).token()
        headers = {
            "content-type": "application/json",
            "accept-encoding": "identity",
            "authorization": f"Bearer {token}",
        }
        headers.update(call.headers)
        return headers

    async def sent(self, call: UpstreamCall, send: Any) -> UpstreamResponse:
        """``send()``'s answer; a refused token is forgotten, so the next call fetches one."""
        try:
            response: UpstreamResponse = await send()
        except UpstreamError as error:
            if error.kind is FailureKind.AUTH_REJECTED:
                self.source(call.provider).forget()
            raise
        return response


class VertexGemini(GeminiAdapter):
    def __init__(self, client: UpstreamHTTP, tokens: Tokens) -> None:
        super().__init__(client)
        self._tokens = tokens

    def url(self, call: UpstreamCall, method: str) -> str:
        return model_url(call.provider, call.model.name, method)

    async def headers(self, call: UpstreamCall) -> dict[str, str]:
        return await self._tokens.headers(call)

    async def _send(
        self, call: UpstreamCall, method: str, payload: dict[str, Any]
    ) -> UpstreamResponse:
        url = self.url(call, method)

        async def send() -> UpstreamResponse:
            return await send_google(self._client, call, url, await self.headers(call), payload)

        return await self._tokens.sent(call, send)

    async def _embed(self, call: UpstreamCall) -> UpstreamReply:
        payload = _checked(call, predict_request)
        response = await self._send(call, "predict", payload)
        answer = await read_json_object(response, self._client.limits.body_bytes)
        body = from_predict_response(answer, call.model.name, call.body.get("encoding_format"))
        if body is None:
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no embeddings")
        return UpstreamReply(
            body=body, usage=usage_from_openai(body.get("usage")), response_model=None
        )


class VertexClaude(AnthropicAdapter):
    def __init__(self, client: UpstreamHTTP, tokens: Tokens) -> None:
        super().__init__(client)
        self._tokens = tokens

    async def _send(self, call: UpstreamCall, request: MessagesRequest) -> UpstreamResponse:
        payload = {k: v for k, v in request.payload.items() if k != "model"}
        payload["anthropic_version"] = call.provider.api_version or "vertex-2023-10-16"
        if call.stream:
            payload["stream"] = True
        method = "streamRawPredict" if call.stream else "rawPredict"
        url = model_url(call.provider, call.model.name, method)

        async def send() -> UpstreamResponse:
            headers = await self._tokens.headers(call)
            return await send_json(self._client, call, url, headers, payload, shape=_claude_error)

        return await self._tokens.sent(call, send)

    async def _send_native(self, call: UpstreamCall) -> UpstreamResponse:
        """/v1/messages as the client sent it, the model in the URL and the version in the
        body (as Vertex takes them); the client's ``anthropic-beta`` goes as a header."""
        payload = {k: v for k, v in call.body.items() if k != "model"}
        payload["anthropic_version"] = call.provider.api_version or "vertex-2023-10-16"
        method = "streamRawPredict" if call.stream else "rawPredict"
        url = model_url(call.provider, call.model.name, method)
        kept = {k: v for k, v in call.headers.items() if k != "anthropic-version"}
        native = dataclasses.replace(call, headers=kept)

        async def send() -> UpstreamResponse:
            headers = await self._tokens.headers(native)
            return await send_json(self._client, call, url, headers, payload, shape=_claude_error)

        return await self._tokens.sent(call, send)

    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]:
        """``count-tokens:rawPredict``: the body as sent with the model's name and Vertex's
        ``anthropic_version``; the answer is Anthropic's ``{"input_tokens": n}``."""
        payload = {k: v for k, v in call.body.items() if k != "stream"}
        payload["model"] = call.model.name
        payload["anthropic_version"] = call.provider.api_version or "vertex-2023-10-16"
        kept = {k: v for k, v in call.headers.items() if k != "anthropic-version"}
        native = dataclasses.replace(call, headers=kept)
        url = count_url(call.provider)

        async def send() -> UpstreamResponse:
            headers = await self._tokens.headers(native)
            return await send_json(self._client, call, url, headers, payload, shape=_claude_error)

        response = await self._tokens.sent(call, send)
        counted = await read_json_object(response, self._client.limits.body_bytes)
        if not isinstance(counted.get("input_tokens"), int):
            raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no input_tokens")
        return {"input_tokens": counted["input_tokens"]}


def natively_claude(call: UpstreamCall) -> bool:
    """A Claude model on Vertex takes /v1/messages natively (``VertexClaude``)."""
    return publisher(call.model.name) == ANTHROPIC


def _claude_error(status: int, body: ErrorBody) -> tuple[int, dict[str, Any]]:
    """Claude's own errors are Anthropic's; Vertex's (quota, auth) are Google's."""
    error = body.data.get("error") if body.is_json and isinstance(body.data, dict) else None
    if isinstance(error, dict) and "status" in error and "type" not in error:
        return google_error(status, body)
    return anthropic_error(status, body)


def _checked(call: UpstreamCall, translate: Any) -> dict[str, Any]:
    try:
        payload: dict[str, Any] = translate(call.body, call.model.name)
    except TranslationError as exc:
        raise refused_translation(exc) from exc
    return payload


class VertexAdapter:
    def __init__(self, client: UpstreamHTTP) -> None:
        tokens = Tokens()
        self.tokens = tokens
        self._gemini = VertexGemini(client, tokens)
        self._claude = VertexClaude(client, tokens)

    def _for(self, call: UpstreamCall) -> GeminiAdapter | AnthropicAdapter:
        return self._claude if publisher(call.model.name) == ANTHROPIC else self._gemini

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        return await self._for(call).complete(call)

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        return await self._for(call).open_stream(call, ask_usage)

    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]:
        """A Messages body's input tokens, counted by Claude on Vertex."""
        return await self._claude.count_tokens(call)
