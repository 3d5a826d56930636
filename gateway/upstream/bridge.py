"""What the Responses and Messages bridges share: an adapter wrapper that serves the calls
of one API a provider does not take natively through the inner adapter's Chat Completions,
its answer and stream translated back; every other call passes through untouched.

A bridge says which calls it translates, the chat call serving one (or the 400 for what
cannot be translated: ``refusals.untranslatable``), how the names the translation left out read in
the client's API, the answer's body, and the stream's writer and step (chat_events).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from gateway.upstream.base import Adapter, UpstreamCall, UpstreamReply
from gateway.upstream.chat_events import Step, Writer, translated_events


class ChatBridge:
    def __init__(self, inner: Adapter, max_event_bytes: int) -> None:
        self._inner = inner
        self._max_event_bytes = max_event_bytes

    def translates(self, call: UpstreamCall) -> bool:
        """The call is served through Chat Completions (else passed on as it is)."""
        raise NotImplementedError

    def chat_call(self, call: UpstreamCall) -> UpstreamCall:
        """The chat call serving ``call``, sharing its ``ignored``; raises the 400."""
        raise NotImplementedError

    def rename_ignored(self, call: UpstreamCall) -> None:
        """``call.ignored`` as the client's API names those fields."""
        raise NotImplementedError

    def answer(self, call: UpstreamCall, reply: UpstreamReply) -> dict[str, Any]:
        """The chat answer's body in the client's API."""
        raise NotImplementedError

    def stream(self, call: UpstreamCall) -> tuple[Writer, Step]:
        """The writer of the client's events and the step feeding it one chat event."""
        raise NotImplementedError

    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        if not self.translates(call):
            return await self._inner.complete(call)
        try:
            reply = await self._inner.complete(self.chat_call(call))
        finally:
            self.rename_ignored(call)
        body = self.answer(call, reply)
        return UpstreamReply(body=body, usage=reply.usage, response_model=reply.response_model)

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        if not self.translates(call):
            return await self._inner.open_stream(call, ask_usage)
        try:
            chunks = await self._inner.open_stream(self.chat_call(call), ask_usage=True)
        finally:
            self.rename_ignored(call)
        writer, step = self.stream(call)
        return translated_events(chunks, writer, self._max_event_bytes, step)
