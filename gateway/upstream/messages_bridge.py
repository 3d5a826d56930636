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
from typing import Any

from gateway.domain.model import AdapterType, Capability, Endpoint
from gateway.messages.answer import to_message
from gateway.messages.errors import error_body, error_type_for
from gateway.messages.request import Untranslatable, to_chat
from gateway.messages.stream import Event, MessagesStreamWriter
from gateway.streaming.openai_stream import DONE_SENTINEL
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.bedrock.native import natively_claude as bedrock_claude
from gateway.upstream.bridge import ChatBridge
from gateway.upstream.chat_events import Step, Writer, chat_chunk, failed_at_once
from gateway.upstream.error_body import redact_json
from gateway.upstream.refusals import untranslatable
from gateway.upstream.responses_bridge import takes_thinking_blocks
from gateway.upstream.vertex.adapter import natively_claude

# The chat name an inner adapter gives what it left out, as the Messages request names it.
_MESSAGES_NAMES = {"reasoning_effort": "thinking", "stop": "stop_sequences"}


class MessagesBridge(ChatBridge):
    def translates(self, call: UpstreamCall) -> bool:
        return translates(call)

    def chat_call(self, call: UpstreamCall) -> UpstreamCall:
        return chat_call(call)

    def rename_ignored(self, call: UpstreamCall) -> None:
        _rename_ignored(call)

    def answer(self, call: UpstreamCall, reply: UpstreamReply) -> dict[str, Any]:
        return to_message(reply.body, reply.usage)

    def stream(self, call: UpstreamCall) -> tuple[Writer, Step]:
        writer = MessagesStreamWriter(call.model.name)
        key = call.provider.api_key
        return writer, lambda name, data, out: _translate(writer, name, data, out, key)


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
        raise untranslatable(refused.message, refused.param) from refused
    for name in translated.ignored:
        call.ignore(name)
    headers = {k: v for k, v in call.headers.items() if not k.startswith("anthropic-")}
    return dataclasses.replace(call, endpoint=Endpoint.CHAT, body=translated.body, headers=headers)


def _rename_ignored(call: UpstreamCall) -> None:
    names = [_MESSAGES_NAMES.get(name, name) for name in call.ignored]
    call.ignored[:] = list(dict.fromkeys(names))


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
    chunk = chat_chunk(name, data)
    error = chunk.get("error")
    if error is None and name != "error":
        out.extend(writer.feed(chunk))
        return False
    if not writer.started:  # nothing sent yet: another attempt may answer
        raise failed_at_once(error, chunk, api_key)
    details = redact_json(error if isinstance(error, dict) else chunk, api_key)
    message = details.get("message") if isinstance(details, dict) else None
    text = message if isinstance(message, str) else "The upstream stream failed."
    out.append(error_body(error_type_for(500), text))
    return True
