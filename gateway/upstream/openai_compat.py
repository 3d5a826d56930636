"""Every OpenAI-compatible upstream: openai, ollama, openrouter, groq, together,
mistral, custom (base URL + bearer key); Azure OpenAI is a variant of it (azure.py)."""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator
from typing import Any

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import Endpoint
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.exchange import first_chunk, read_json_object, relay_rest, send_json
from gateway.upstream.http import UpstreamHTTP, UpstreamResponse, body_chunks
from gateway.usage.openai_usage import usage_from_openai, usage_from_responses


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
            raise UpstreamError(
                FailureKind.INVALID_RESPONSE, "upstream answered an error with a 2xx status"
            )
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
            raise UpstreamError(
                FailureKind.INVALID_RESPONSE, "upstream compressed its stream unasked"
            )
        chunks = body_chunks(response)
        first = await first_chunk(response, chunks)
        return relay_rest(first, chunks, response)

    async def _send(self, call: UpstreamCall, ask_usage: bool) -> UpstreamResponse:
        return await send_json(
            self._client, call, self.url(call), self.headers(call), self.payload(call, ask_usage)
        )


def _responses_reply(body: dict[str, Any]) -> UpstreamReply:
    """A native ``Response``; one that failed (``error`` set) or has no ``output`` is
    unusable, like a chat answer without choices."""
    if body.get("error") is not None or not isinstance(body.get("output"), list):
        raise UpstreamError(FailureKind.INVALID_RESPONSE, "upstream answered no usable response")
    model = body.get("model")
    return UpstreamReply(
        body=body,
        usage=usage_from_responses(body.get("usage")),
        response_model=model if isinstance(model, str) else None,
    )


@functools.lru_cache(maxsize=256)
def bearer(api_key: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {api_key}"} if api_key else {}
