"""A Chat Completions stream as Anthropic's Messages events (pure, stateful per stream).

``feed`` takes each chat chunk and returns the events it makes: ``message_start`` first,
then a ``thinking`` block for ``reasoning_content`` (closed by a ``signature_delta`` when
the chunk's ``thinking_blocks`` carry Claude's signature), a ``text`` block for the text
and a ``tool_use`` block per tool call (its arguments as ``input_json_delta``), each
opened with ``content_block_start`` and closed with ``content_block_stop`` when the next
begins; ``finish`` (at ``[DONE]``) closes the last
block and sends ``message_delta`` (the stop reason and the usage, which a chat stream
reports in its last chunk) and ``message_stop``.
"""

from __future__ import annotations

from typing import Any

from gateway.messages.answer import anthropic_usage, message_id, stop_reason
from gateway.usage.openai_usage import usage_from_openai

Event = dict[str, Any]


class MessagesStreamWriter:
    def __init__(self, model: str) -> None:
        self._model = model
        self.started = False
        self.finish_reason: str | None = None
        self._usage: Any = None
        self._open: tuple[str, int] | None = None  # ("text" | "tool", block index)
        self._blocks = 0
        self._tools: dict[int, int] = {}  # chat tool call index -> block index
        self._saw_tool = False

    def start(self, chunk: dict[str, Any] | None = None) -> list[Event]:
        self.started = True
        model = chunk.get("model") if chunk else None
        message: dict[str, Any] = {
            "id": message_id(chunk.get("id") if chunk else None),
            "type": "message",
            "role": "assistant",
            "model": model if isinstance(model, str) and model else self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0},
        }
        return [{"type": "message_start", "message": message}]

    def feed(self, chunk: dict[str, Any]) -> list[Event]:
        out = [] if self.started else self.start(chunk)
        usage = usage_from_openai(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                out.extend(self._thinking(delta.get("reasoning_content")))
                out.extend(self._signed(delta.get("thinking_blocks")))
                out.extend(self._text(delta.get("content")))
                for call in delta.get("tool_calls") or []:
                    if isinstance(call, dict):
                        out.extend(self._tool(call))
            reason = choice.get("finish_reason")
            if isinstance(reason, str):
                self.finish_reason = reason
                out.extend(self._close())
        return out

    def finish(self) -> list[Event]:
        out = [] if self.started else self.start()
        out.extend(self._close())
        reason = "tool_use" if self._saw_tool else stop_reason(self.finish_reason)
        out.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": anthropic_usage(self._usage),
            }
        )
        out.append({"type": "message_stop"})
        return out

    def _text(self, text: Any) -> list[Event]:
        if not isinstance(text, str) or not text:
            return []
        out: list[Event] = []
        if self._open is None or self._open[0] != "text":
            out.extend(self._close())
            out.append(self._begin("text", {"type": "text", "text": ""}))
        delta = {"type": "text_delta", "text": text}
        out.append(self._delta(delta))
        return out

    def _thinking(self, text: Any) -> list[Event]:
        if not isinstance(text, str) or not text:
            return []
        out: list[Event] = []
        if self._open is None or self._open[0] != "thinking":
            out.extend(self._close())
            out.append(
                self._begin("thinking", {"type": "thinking", "thinking": "", "signature": ""})
            )
        out.append(self._delta({"type": "thinking_delta", "thinking": text}))
        return out

    def _signed(self, blocks: Any) -> list[Event]:
        """A thinking block whole at its end (Claude's, with its signature): the signature
        closes the block its text streamed in."""
        out: list[Event] = []
        for block in blocks if isinstance(blocks, list) else []:
            signature = block.get("signature") if isinstance(block, dict) else None
            if not isinstance(signature, str) or not signature:
                continue
            if self._open is None or self._open[0] != "thinking":
                out.extend(self._thinking(str(block.get("thinking") or "")))
            if self._open is not None and self._open[0] == "thinking":
                out.append(self._delta({"type": "signature_delta", "signature": signature}))
                out.extend(self._close())
        return out

    def _tool(self, call: dict[str, Any]) -> list[Event]:
        index = call.get("index")
        index = index if isinstance(index, int) and not isinstance(index, bool) else 0
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        out: list[Event] = []
        if index not in self._tools:
            out.extend(self._close())
            self._saw_tool = True
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{index}",
                "name": function.get("name") or "",
                "input": {},
            }
            out.append(self._begin("tool", block))
            self._tools[index] = self._blocks - 1
        arguments = function.get("arguments")
        at = self._tools[index]
        if isinstance(arguments, str) and arguments and self._open == ("tool", at):
            out.append(self._delta({"type": "input_json_delta", "partial_json": arguments}))
        return out

    def _begin(self, kind: str, block: dict[str, Any]) -> Event:
        index = self._blocks
        self._blocks += 1
        self._open = (kind, index)
        return {"type": "content_block_start", "index": index, "content_block": block}

    def _delta(self, delta: dict[str, Any]) -> Event:
        assert self._open is not None
        return {"type": "content_block_delta", "index": self._open[1], "delta": delta}

    def _close(self) -> list[Event]:
        if self._open is None:
            return []
        index = self._open[1]
        self._open = None
        return [{"type": "content_block_stop", "index": index}]
