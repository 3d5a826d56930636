"""Anthropic Messages SSE events turned into OpenAI chat.completion.chunk dicts.

Pure and stateful per stream: the adapter parses SSE frames and feeds each
(event name, JSON data) here; what comes back is relayed to the client.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import envelope
from gateway.domain.usage import Usage
from gateway.upstream.anthropic.errors import STATUS_BY_ERROR_TYPE, parse_error
from gateway.upstream.anthropic.translate import (
    finish_reason,
    openai_usage,
    usage_from_anthropic,
)
from gateway.upstream.chunks import ToolChunks

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class StreamTranslator(ToolChunks):
    """Text, tool calls and the response tool as ``ToolChunks`` has them. Extended
    thinking: each ``thinking_delta`` is a chunk with ``reasoning_content``; when a thinking
    (or redacted thinking) block ends, a chunk carries the whole block, with its signature,
    in ``thinking_blocks``."""

    def __init__(self, model_name: str, created: int, response_tool: str | None = None) -> None:
        super().__init__(response_tool)
        self._model = model_name
        self._created = created
        self._id = ""
        self._role_sent = False
        self._usage: dict[str, int] | None = None
        self.done = False  # message_stop was seen: the stream ended normally
        # An in-stream `error` event as an OpenAI envelope, and the HTTP status Anthropic
        # uses for its type (529 for overloaded).
        self.error: dict[str, Any] | None = None
        self.error_status: int | None = None

    @property
    def usage(self) -> Usage | None:
        return None if self._usage is None else usage_from_anthropic(self._usage)

    def feed(self, event: str, data: dict[str, Any]) -> list[dict[str, Any]]:
        """Chunks for one Anthropic event; the data's `type` stands in for a missing name."""
        kind = event or str(data.get("type", ""))
        match kind:
            case "message_start":
                return self._on_message_start(data)
            case "content_block_start":
                return self._on_block_start(data)
            case "content_block_delta":
                return self._on_block_delta(data)
            case "content_block_stop":
                return self._on_block_stop(data)
            case "message_delta":
                return self._on_message_delta(data)
            case "message_stop":
                self.done = True
                return self._release()
            case "error":
                self._on_error(data)
            # ping, and event types Anthropic may add later, say nothing.
        return []

    def usage_chunk(self) -> dict[str, Any]:
        """The final `choices: []` chunk for clients that set stream_options.include_usage."""
        chunk = self._envelope([])
        chunk["usage"] = openai_usage(self.usage or Usage(input_tokens=0, output_tokens=0))
        return chunk

    def _on_message_start(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        message = data.get("message")
        if isinstance(message, dict):
            if isinstance(message.get("id"), str):
                self._id = message["id"]
            if isinstance(message.get("model"), str):
                self._model = message["model"]
            self._merge_usage(message.get("usage"))
        return [self._chunk({"content": ""})]

    def _on_block_start(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        block = data.get("content_block")
        if not isinstance(block, dict):
            return []
        if block.get("type") == "text":
            return self._text(block.get("text"))
        if block.get("type") == "thinking":
            self._thinking[_int(data.get("index"))] = {
                "type": "thinking",
                "thinking": str(block.get("thinking") or ""),
                "signature": str(block.get("signature") or ""),
            }
            return []
        if block.get("type") == "redacted_thinking":
            self._thinking[_int(data.get("index"))] = {
                "type": "redacted_thinking",
                "data": str(block.get("data") or ""),
            }
            return []
        if block.get("type") != "tool_use":
            return []  # server-side tool blocks have no OpenAI counterpart
        return self._tool_start(_int(data.get("index")), block.get("id"), block.get("name"))

    def _on_block_delta(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return []
        if delta.get("type") == "text_delta":
            return self._text(delta.get("text"))
        index = _int(data.get("index"))
        thought = self._thinking.get(index)
        if thought is not None:
            return self._thinking_delta(thought, delta)
        if delta.get("type") != "input_json_delta":
            return []
        return self._tool_input(index, delta.get("partial_json"))

    def _on_block_stop(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        return self._block_stop(_int(data.get("index")))

    def _on_message_delta(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        self._merge_usage(data.get("usage"))
        delta = data.get("delta")
        reason = finish_reason(delta.get("stop_reason")) if isinstance(delta, dict) else None
        reason = self._finish_reason(reason)
        released = self._release()
        return released if reason is None else [*released, self._chunk({}, reason)]

    def _thinking_delta(
        self, thought: dict[str, Any], delta: dict[str, Any]
    ) -> list[dict[str, Any]]:
        if delta.get("type") == "signature_delta" and isinstance(delta.get("signature"), str):
            thought["signature"] = str(thought.get("signature", "")) + delta["signature"]
            return []
        text = delta.get("thinking")
        if delta.get("type") != "thinking_delta" or not isinstance(text, str) or not text:
            return []
        thought["thinking"] = str(thought.get("thinking", "")) + text
        return [self._chunk({"reasoning_content": text})]

    def _on_error(self, data: dict[str, Any]) -> None:
        kind, message = parse_error(data)
        self.error_status = STATUS_BY_ERROR_TYPE.get(kind or "", 500)
        text = message or "the Anthropic upstream reported an error mid-stream"
        self.error = envelope(self.error_status, text, code=kind or "upstream_error")

    def _merge_usage(self, usage: Any) -> None:
        # Later events restate counts cumulatively: a present field replaces the earlier one.
        if not isinstance(usage, dict):
            return
        merged = dict(self._usage or {})
        for field in _USAGE_FIELDS:
            value = usage.get(field)
            if isinstance(value, int) and not isinstance(value, bool):
                merged[field] = value
        self._usage = merged


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
