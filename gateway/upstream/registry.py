"""Adapter type → adapter: one shared OpenAI-compatible adapter for most providers."""

from __future__ import annotations

from typing import Any

from gateway.domain.model import AdapterType
from gateway.upstream.anthropic import AnthropicAdapter
from gateway.upstream.azure import AzureOpenAIAdapter
from gateway.upstream.base import Adapter, UpstreamCall
from gateway.upstream.bedrock import BedrockAdapter
from gateway.upstream.echo import EchoAdapter
from gateway.upstream.gemini import GeminiAdapter
from gateway.upstream.http import UpstreamHTTP
from gateway.upstream.messages_bridge import MessagesBridge
from gateway.upstream.openai_compat import OpenAICompatAdapter
from gateway.upstream.responses_bridge import ResponsesBridge
from gateway.upstream.vertex import VertexAdapter


class AdapterRegistry:
    def __init__(self, client: UpstreamHTTP) -> None:
        compat = OpenAICompatAdapter(client)
        self._adapters: dict[AdapterType, Adapter] = {t: compat for t in AdapterType}
        self._adapters[AdapterType.AZURE_OPENAI] = AzureOpenAIAdapter(client)
        self._adapters[AdapterType.ANTHROPIC] = AnthropicAdapter(client)
        self._adapters[AdapterType.GEMINI] = GeminiAdapter(client)
        self._adapters[AdapterType.VERTEX] = VertexAdapter(client)
        self._adapters[AdapterType.ECHO] = EchoAdapter()
        self._adapters[AdapterType.BEDROCK] = BedrockAdapter(client)
        # count_tokens, native to Claude: the adapters that count a Messages body.
        self._counters: dict[AdapterType, AnthropicAdapter | VertexAdapter | BedrockAdapter] = {
            kind: adapter
            for kind, adapter in self._adapters.items()
            if isinstance(adapter, (AnthropicAdapter, VertexAdapter, BedrockAdapter))
        }
        # /v1/responses: native where the provider offers it, else translated to chat;
        # /v1/messages: native to Anthropic, else translated to chat.
        bridges: dict[int, Adapter] = {}
        events = client.limits.event_bytes
        for kind, adapter in self._adapters.items():
            if id(adapter) not in bridges:
                bridges[id(adapter)] = ResponsesBridge(MessagesBridge(adapter, events), events)
            self._adapters[kind] = bridges[id(adapter)]

    def for_type(self, adapter: AdapterType) -> Adapter:
        return self._adapters[adapter]

    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]:
        """``{"input_tokens": n}`` for a Messages body, counted by the provider (only for
        a call ``counts_natively`` says yes to)."""
        return await self._counters[call.provider.adapter].count_tokens(call)
