"""``/v1/responses`` for every provider: forwarded as is where the provider offers the
Responses API (``providers[].responsesApi``), else translated to Chat Completions and
served by the provider's own adapter (the Anthropic one translating further).

The bridge wraps each adapter; chat, embeddings and completions calls pass through it
untouched. What cannot be translated is refused before anything is sent: a 400
``unsupported_parameter`` naming the parameter (``FailureKind.UNTRANSLATABLE``: not
retried, no fallback, the provider's health and circuit untouched: the request itself
asks for what this route cannot give). What is left out is named on the call
(``UpstreamCall.ignore``), by its Responses name. See docs/responses.md.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from gateway.domain.model import AdapterType, Endpoint
from gateway.responses.answer import to_response
from gateway.responses.request import Unsupported, summary_asked, to_chat
from gateway.responses.stream import Event, ResponsesStreamWriter
from gateway.streaming.openai_stream import DONE_SENTINEL
from gateway.upstream.base import UpstreamCall, UpstreamReply
from gateway.upstream.bridge import ChatBridge
from gateway.upstream.chat_events import Step, Writer, chat_chunk, failed_at_once
from gateway.upstream.error_body import redact_json
from gateway.upstream.refusals import untranslatable
from gateway.upstream.vertex.urls import ANTHROPIC as ANTHROPIC_PUBLISHER
from gateway.upstream.vertex.urls import publisher


class ResponsesBridge(ChatBridge):
    def translates(self, call: UpstreamCall) -> bool:
        return translates(call)

    def chat_call(self, call: UpstreamCall) -> UpstreamCall:
        return chat_call(call)

    def rename_ignored(self, call: UpstreamCall) -> None:
        _rename_ignored(call)

    def answer(self, call: UpstreamCall, reply: UpstreamReply) -> dict[str, Any]:
        return to_response(reply.body, call.body, reply.usage, int(time.time()))

    def stream(self, call: UpstreamCall) -> tuple[Writer, Step]:
        writer = ResponsesStreamWriter(call.body, int(time.time()), "")
        key = call.provider.api_key
        return writer, lambda name, data, out: _translate(writer, name, data, out, key)


def translates(call: UpstreamCall) -> bool:
    return call.endpoint is Endpoint.RESPONSES and not call.provider.responses_api


# The chat name an inner adapter gives what it left out, as the Responses request names it.
_RESPONSES_NAMES = {
    "reasoning_effort": "reasoning.effort",
    "max_tokens": "max_output_tokens",
    "verbosity": "text.verbosity",
}


def chat_call(call: UpstreamCall) -> UpstreamCall:
    """The chat call serving a Responses call, or the 400 for what cannot be translated.
    The chat call shares ``call.ignored``: what either translation leaves out is listed."""
    thinking = takes_thinking_blocks(call)
    try:
        body = to_chat(call.body, call.provider.id, thinking=thinking, ignored=call.ignored)
    except Unsupported as refused:
        raise untranslatable(refused.message, refused.param) from refused
    return dataclasses.replace(call, endpoint=Endpoint.CHAT, body=body)


def takes_thinking_blocks(call: UpstreamCall) -> bool:
    """The provider answers Claude's thinking blocks and takes them back (``thinking_blocks``
    on chat messages): Anthropic, Bedrock, and Claude models on Vertex AI."""
    adapter = call.provider.adapter
    if adapter is AdapterType.VERTEX:
        return publisher(call.model.name) == ANTHROPIC_PUBLISHER
    return adapter in (AdapterType.ANTHROPIC, AdapterType.BEDROCK)


def _rename_ignored(call: UpstreamCall) -> None:
    """The chat names the inner adapter listed, as the client's Responses request names
    them; the reasoning left out takes its summary with it."""
    names = [_RESPONSES_NAMES.get(name, name) for name in call.ignored]
    if "reasoning.effort" in names and summary_asked(call.body):
        names.append("reasoning.summary")
    call.ignored[:] = list(dict.fromkeys(names))


def _translate(
    writer: ResponsesStreamWriter,
    name: str | None,
    data: str,
    out: list[Event],
    api_key: str | None,
) -> bool:
    """One chat event's Responses events appended to ``out``; True when the stream ends."""
    if data.strip() == DONE_SENTINEL:
        if not writer.started:
            out.extend(writer.start())
        out.extend(writer.finish())
        return True
    chunk = chat_chunk(name, data)
    error = chunk.get("error")
    failed = error is not None or name == "error"
    if failed and not writer.started:  # nothing sent yet: another attempt may answer
        raise failed_at_once(error, chunk, api_key)
    if not writer.started:
        out.extend(writer.start())
    if failed:
        details = redact_json(error if isinstance(error, dict) else chunk, api_key)
        message = details.get("message") if isinstance(details, dict) else None
        code = details.get("code") if isinstance(details, dict) else None
        param = details.get("param") if isinstance(details, dict) else None
        out.append(
            writer.error(
                code=code if isinstance(code, str) else None,
                message=message if isinstance(message, str) else "The upstream stream failed.",
                param=param if isinstance(param, str) else None,
            )
        )
        return True
    out.extend(writer.feed(chunk))
    return False
