"""``/v1/messages`` for every provider: native to Anthropic providers and to Claude on
Vertex AI and on Bedrock (their adapter sends the body as it is), else translated to Chat
Completions and served by the provider's own adapter, its answer and stream translated back to
Anthropic's shapes.

The bridge wraps each adapter; other endpoints' calls pass through it untouched. What
cannot be translated is refused before anything is sent: a 400 naming the parameter
(``FailureKind.UNTRANSLATABLE``: not retried, no fallback, the provider's health
untouched). What the translation leaves out is listed on the call (``call.ignore``).
See docs/messages.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import msgspec

from gateway.domain.errors import UpstreamError, envelope
from gateway.domain.failures import FailureKind
from gateway.domain.model import AdapterType, Capability, Endpoint
from gateway.messages.answer import to_message
from gateway.messages.errors import error_body, error_type_for
from gateway.messages.request import Untranslatable, to_chat
from gateway.messages.stream import Event, MessagesStreamWriter
from gateway.streaming.openai_stream import DONE_SENTINEL
from gateway.streaming.sse import EventTooLarge, SSEDecoder, encode_event
from gateway.upstream.base import Adapter, UpstreamCall, UpstreamReply
from gateway.upstream.bedrock.native import natively_claude as bedrock_claude
from gateway.upstream.error_body import redact_json
from gateway.upstream.responses_bridge import takes_thinking_blocks
from gateway.upstream.vertex.adapter import natively_claude

_ENCODER = msgspec.json.Encoder()
_decoder = msgspec.json.Decoder()
# The chat name an inner adapter gives what it left out, as the Messages request names it.
_MESSAGES_NAMES = {"reasoning_effort": "thinking", "stop": "stop_sequences"}


class MessagesBridge:
    def __init__(self, inner: Adapter, max_event_bytes: int) -> None:
        self._inner = inner
        self._max_event_bytes = max_event_bytes

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        if not translates(call):
            return await self._inner.complete(call)
        try:
            reply = await self._inner.complete(chat_call(call))
        finally:
            _rename_ignored(call)
        body = to_message(reply.body, reply.usage)
        return UpstreamReply(body=body, usage=reply.usage, response_model=reply.response_model)

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        if not translates(call):
            return await self._inner.open_stream(call, ask_usage)
        try:
            chunks = await self._inner.open_stream(chat_call(call), ask_usage=True)
        finally:
            _rename_ignored(call)
        writer = MessagesStreamWriter(call.model.name)
        return _events(chunks, writer, self._max_event_bytes, call.provider.api_key)


def translates(call: UpstreamCall) -> bool:
    """Not native: Anthropic's providers and Claude on Vertex and Bedrock take the body as
    it is."""
    if call.endpoint is not Endpoint.MESSAGES:
        return False
    adapter = call.provider.adapter
    if adapter is AdapterType.ANTHROPIC:
        return False
    if adapter is AdapterType.BEDROCK:
        return not bedrock_claude(call.model.name)
    return not (adapter is AdapterType.VERTEX and natively_claude(call))


def chat_call(call: UpstreamCall) -> UpstreamCall:
    """The chat call serving a Messages call (Anthropic's headers stay behind), or the 400
    for what cannot be translated. It shares ``call.ignored``."""
    # Claude behind another API plans thinking from reasoning_effort itself, and takes its
    # thinking blocks back.
    takes = takes_thinking_blocks(call)
    reasoning = takes or Capability.REASONING in call.model.capabilities
    try:
        translated = to_chat(call.body, reasoning=reasoning, thinking_blocks=takes)
    except Untranslatable as refused:
        refusal = envelope(400, refused.message, "unsupported_parameter", refused.param)
        raise UpstreamError(
            FailureKind.UNTRANSLATABLE,
            refused.message,
            status=400,
            body=_ENCODER.encode(refusal),
        ) from refused
    for name in translated.ignored:
        call.ignore(name)
    headers = {k: v for k, v in call.headers.items() if not k.startswith("anthropic-")}
    return dataclasses.replace(call, endpoint=Endpoint.CHAT, body=translated.body, headers=headers)


def _rename_ignored(call: UpstreamCall) -> None:
    names = [_MESSAGES_NAMES.get(name, name) for name in call.ignored]
    call.ignored[:] = list(dict.fromkeys(names))


async def _events(
    chunks: AsyncIterator[bytes],
    writer: MessagesStreamWriter,
    max_event_bytes: int,
    api_key: str | None,
) -> AsyncGenerator[bytes, None]:
    """Chat SSE in, Messages SSE out. Nothing is sent before the first chat event is read
    whole, so a stream that opens badly can still fall back."""
    decoder = SSEDecoder(max_event_bytes)
    try:
        async for chunk in chunks:
            out: list[Event] = []
            for event in decoder.feed(chunk):
                if _translate(writer, event.event, event.data, out, api_key):
                    yield _encode(out)
                    return
            if out:
                yield _encode(out)
        if writer.finish_reason is None:
            raise UpstreamError(
                FailureKind.STREAM_CUT, "the upstream stream ended before it was complete"
            )
        yield _encode(writer.finish())  # finished, though without [DONE]
    except EventTooLarge as exc:
        raise UpstreamError(
            FailureKind.OVERSIZE, f"an upstream stream event exceeds {exc.limit} bytes"
        ) from exc
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()


def _translate(
    writer: MessagesStreamWriter,
    name: str | None,
    data: str,
    out: list[Event],
    api_key: str | None,
) -> bool:
    """One chat event's Messages events appended to ``out``; True when the stream ends."""
    if data.strip() == DONE_SENTINEL:
        out.extend(writer.finish())
        return True
    try:
        chunk: Any = _decoder.decode(data)
    except (msgspec.DecodeError, RecursionError):
        chunk = None
    if not isinstance(chunk, dict):
        if name != "error":
            raise UpstreamError(
                FailureKind.INVALID_RESPONSE, "upstream sent an event that is not JSON"
            )
        chunk = {"error": {"message": data}}
    error = chunk.get("error")
    if error is None and name != "error":
        out.extend(writer.feed(chunk))
        return False
    details = redact_json(error if isinstance(error, dict) else chunk, api_key)
    if not writer.started:  # nothing sent yet: another attempt may answer
        raise UpstreamError(
            FailureKind.HTTP_5XX,
            "upstream stream failed at once",
            status=502,
            body=_ENCODER.encode({"error": details}),
        )
    message = details.get("message") if isinstance(details, dict) else None
    text = message if isinstance(message, str) else "The upstream stream failed."
    out.append(error_body(error_type_for(500), text))
    return True


def _encode(events: list[Event]) -> bytes:
    return b"".join(encode_event(_ENCODER.encode(e), str(e["type"])) for e in events)
