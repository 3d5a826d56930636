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
from gateway.upstream.chunks import ChatChunks

_USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


class StreamTranslator(ChatChunks):
    """``response_tool``: the tool standing in for response_format, whose streamed
    input alone is the answer's content (and calling it alone is a plain stop).

    With a response tool, text is held until the stream shows whether that tool is
    called: when it is, the held text and any text after it are dropped (the content
    must parse as JSON); otherwise the text is sent before the first client tool call,
    or before the finish chunk.

    Extended thinking: each ``thinking_delta`` is a chunk with ``reasoning_content``; when
    a thinking (or redacted thinking) block ends, a chunk carries the whole block, with its
    signature, in ``thinking_blocks`` (what a later turn sends back)."""

    def __init__(self, model_name: str, created: int, response_tool: str | None = None) -> None:
        self._model = model_name
        self._created = created
        self._response_tool = response_tool
        self._id = ""
        self._role_sent = False
        # Anthropic content-block index -> OpenAI tool_calls index (counts tool calls only).
        self._tool_index: dict[int, int] = {}
        # Blocks of the response tool -> whether any of their input was sent yet.
        self._answer_blocks: dict[int, bool] = {}
        self._held: list[str] = []  # text held while the response tool may still come
        self._thinking: dict[int, dict[str, Any]] = {}  # thinking blocks by block index
        self._usage: dict[str, int] | None = None
        self._done = False
        self._error: dict[str, Any] | None = None
        self._error_status: int | None = None

    @property
    def usage(self) -> Usage | None:
        return None if self._usage is None else usage_from_anthropic(self._usage)

    @property
    def done(self) -> bool:
        """message_stop was seen: the stream ended normally."""
        return self._done

    @property
    def error(self) -> dict[str, Any] | None:
        """The OpenAI error envelope of an in-stream `error` event."""
        return self._error

    @property
    def error_status(self) -> int | None:
        """The HTTP status Anthropic uses for that error's type (529 for overloaded)."""
        return self._error_status

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
                self._done = True
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
            return []  # thinking and server-side tool blocks have no OpenAI counterpart
        if self._response_tool is not None and block.get("name") == self._response_tool:
            self._answer_blocks[_int(data.get("index"))] = False
            self._held.clear()  # the answer is the tool's JSON alone
            return []
        released = self._release()
        tool_index = len(self._tool_index)
        self._tool_index[_int(data.get("index"))] = tool_index
        call = {
            "index": tool_index,
            "id": block.get("id"),
            "type": "function",
            "function": {"name": block.get("name"), "arguments": ""},
        }
        return [*released, self._chunk({"tool_calls": [call]})]

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
        partial = delta.get("partial_json")
        if index in self._answer_blocks:
            if not isinstance(partial, str) or not partial:
                return []
            self._answer_blocks[index] = True
            return [self._chunk({"content": partial})]
        tool_index = self._tool_index.get(index)
        if tool_index is None or not isinstance(partial, str) or not partial:
            return []
        call = {"index": tool_index, "function": {"arguments": partial}}
        return [self._chunk({"tool_calls": [call]})]

    def _on_block_stop(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        # An argument-less answer may stream no input at all: it is still a JSON object.
        index = _int(data.get("index"))
        thought = self._thinking.pop(index, None)
        if thought is not None:
            return [self._chunk({"thinking_blocks": [thought]})]
        if self._answer_blocks.get(index) is False:
            self._answer_blocks[index] = True
            return [self._chunk({"content": "{}"})]
        return []

    def _on_message_delta(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        self._merge_usage(data.get("usage"))
        delta = data.get("delta")
        reason = finish_reason(delta.get("stop_reason")) if isinstance(delta, dict) else None
        if reason == "tool_calls" and self._answer_blocks and not self._tool_index:
            reason = "stop"  # only the response tool was called: that is the answer
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

    def _text(self, text: Any) -> list[dict[str, Any]]:
        """A text piece: sent at once, or held (see the class) with a response tool."""
        if not isinstance(text, str) or not text:
            return []
        if self._response_tool is None:
            return [self._chunk({"content": text})]
        if not self._answer_blocks:  # text once the answer tool is called is dropped
            self._held.append(text)
        return []

    def _release(self) -> list[dict[str, Any]]:
        """The held text, as one chunk, when the response tool was not called."""
        if not self._held or self._answer_blocks:
            return []
        text = "".join(self._held)
        self._held.clear()
        return [self._chunk({"content": text})]

    def _on_error(self, data: dict[str, Any]) -> None:
        kind, message = parse_error(data)
        self._error_status = STATUS_BY_ERROR_TYPE.get(kind or "", 500)
        text = message or "the Anthropic upstream reported an error mid-stream"
        self._error = envelope(self._error_status, text, code=kind or "upstream_error")

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
