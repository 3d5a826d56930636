"""A streamed answer's content, put together for a span (telemetry.otel.captureContent).

Only a call whose content is captured keeps it: the relay hands each decoded event to
``StreamedContent.add``, which understands the three stream shapes the gateway relays:
Chat Completions chunks (``choices[].delta``: text, reasoning, tool calls by index), the
Responses API's ``response.completed`` (the whole output), and the Messages API's
``content_block_*`` events (text, thinking and tool input by block index). ``messages``
is the answer in the shape a whole answer's capture has: chat messages, or the
Responses/Messages output as the API gave it. Pure.
"""

from __future__ import annotations

from typing import Any


class StreamedContent:
    __slots__ = ("_blocks", "_calls", "_choices", "_output")

    def __init__(self) -> None:
        self._choices: dict[int, dict[str, Any]] = {}  # chat: by choice index
        self._calls: dict[int, dict[int, dict[str, Any]]] = {}  # chat: its tool calls by index
        self._blocks: dict[int, dict[str, Any]] = {}  # messages: by content block index
        self._output: Any = None  # responses: response.completed's output

    def add(self, event: dict[str, Any]) -> None:
        choices = event.get("choices")
        if isinstance(choices, list):
            for choice in choices:
                if isinstance(choice, dict):
                    self._add_choice(choice)
            return
        kind = event.get("type")
        if kind == "response.completed":
            response = event.get("response")
            if isinstance(response, dict):
                self._output = response.get("output")
        elif kind == "content_block_start":
            self._start_block(event)
        elif kind == "content_block_delta":
            self._add_block_delta(event)

    def messages(self) -> list[Any]:
        if self._output is not None:
            return self._output if isinstance(self._output, list) else [self._output]
        if self._blocks:
            return [
                {"role": "assistant", "content": [self._blocks[i] for i in sorted(self._blocks)]}
            ]
        messages = []
        for index in sorted(self._choices):
            message = dict(self._choices[index])
            calls = self._calls.get(index)
            if calls:
                message["tool_calls"] = [calls[i] for i in sorted(calls)]
            messages.append(message)
        return messages

    def _add_choice(self, choice: dict[str, Any]) -> None:
        index = choice.get("index", 0)
        index = index if isinstance(index, int) else 0
        message = self._choices.setdefault(index, {"role": "assistant"})
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            text = choice.get("text")  # legacy completions
            if isinstance(text, str):
                message["content"] = message.get("content", "") + text
            return
        for field in ("content", "reasoning_content", "refusal"):
            piece = delta.get(field)
            if isinstance(piece, str):
                message[field] = message.get(field, "") + piece
        calls = delta.get("tool_calls")
        if isinstance(calls, list):
            kept = self._calls.setdefault(index, {})
            for call in calls:
                if isinstance(call, dict):
                    _add_call(kept, call)
        finish = choice.get("finish_reason")
        if isinstance(finish, str):
            message["finish_reason"] = finish

    def _start_block(self, event: dict[str, Any]) -> None:
        index, block = event.get("index"), event.get("content_block")
        if isinstance(index, int) and isinstance(block, dict):
            self._blocks[index] = dict(block)

    def _add_block_delta(self, event: dict[str, Any]) -> None:
        index, delta = event.get("index"), event.get("delta")
        if not isinstance(index, int) or not isinstance(delta, dict):
            return
        block = self._blocks.setdefault(index, {})
        for field, into in (("text", "text"), ("thinking", "thinking"), ("partial_json", "input")):
            piece = delta.get(field)
            if isinstance(piece, str):
                previous = block.get(into)
                block[into] = (previous if isinstance(previous, str) else "") + piece


def _add_call(kept: dict[int, dict[str, Any]], call: dict[str, Any]) -> None:
    index = call.get("index", len(kept))
    entry = kept.setdefault(index if isinstance(index, int) else len(kept), {"type": "function"})
    if isinstance(call.get("id"), str):
        entry["id"] = call["id"]
    function = call.get("function")
    if isinstance(function, dict):
        target = entry.setdefault("function", {"name": "", "arguments": ""})
        for field in ("name", "arguments"):
            piece = function.get(field)
            if isinstance(piece, str):
                target[field] += piece
