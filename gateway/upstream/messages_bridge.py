"""``/v1/messages`` for every provider: native to Anthropic providers (their adapter sends
the body as it is), else translated to Chat Completions and served by the provider's own
adapter, its answer and stream translated back to Anthropic's shapes.

The bridge wraps each adapter; other endpoints' calls pass through it untouched. What
cannot be translated is refused before anything is sent: a 400 naming the parameter,
relayed like an upstream 400 (not retried, no fallback). See docs/messages.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator

import msgspec

from gateway.domain.errors import UpstreamError, envelope
from gateway.domain.failures import FailureKind
from gateway.domain.model import AdapterType, Endpoint
from gateway.upstream.base import Adapter, UpstreamCall, UpstreamReply

_ENCODER = msgspec.json.Encoder()


class MessagesBridge:
    def __init__(self, inner: Adapter, max_event_bytes: int) -> None:
        self._inner = inner
        self._max_event_bytes = max_event_bytes

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        if not translates(call):
            return await self._inner.complete(call)
        raise _refusal(call)

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        if not translates(call):
            return await self._inner.open_stream(call, ask_usage)
        raise _refusal(call)


def translates(call: UpstreamCall) -> bool:
    return call.endpoint is Endpoint.MESSAGES and call.provider.adapter is not AdapterType.ANTHROPIC


def chat_call(call: UpstreamCall, body: dict[str, object]) -> UpstreamCall:
    """The chat call serving a Messages call: Anthropic's headers stay behind."""
    headers = {k: v for k, v in call.headers.items() if not k.startswith("anthropic-")}
    return dataclasses.replace(call, endpoint=Endpoint.CHAT, body=body, headers=headers)


def _refusal(call: UpstreamCall) -> UpstreamError:
    message = (
        f"The model '{call.model.id}' is not served by Anthropic; /v1/messages reaches only "
        "Anthropic providers."
    )
    refusal = envelope(400, message, "unsupported_operation")
    return UpstreamError(FailureKind.HTTP_4XX, message, status=400, body=_ENCODER.encode(refusal))
