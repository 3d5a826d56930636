"""ConverseStream events turned into OpenAI chat.completion.chunk dicts.

Pure and stateful per stream: the adapter decodes the event-stream frames (botocore's
decoder) and feeds each (event type, JSON payload) here. Converse sends ``messageStart``,
then per content block ``contentBlockStart`` (tool calls only), ``contentBlockDelta``
(``text``, ``toolUse.input`` as partial JSON, ``reasoningContent``) and
``contentBlockStop``, then ``messageStop`` (the stop reason) and ``metadata`` (usage),
which ends the stream.

Text, tool calls, thinking blocks and the response tool (``response_format``) are
written as ``ToolChunks`` has them, as for Anthropic's own stream.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.usage import Usage
from gateway.upstream.bedrock.translate import finish_reason, openai_usage, usage_from_bedrock
from gateway.upstream.chunks import ToolChunks


class StreamTranslator(ToolChunks):
    def __init__(
        self, model_name: str, created: int, chunk_id: str, response_tool: str | None = None
    ) -> None:
        super().__init__(response_tool)
        self._model = model_name
        self._created = created
        self._id = chunk_id
        self._role_sent = False
        self.usage: Usage | None = None
        self.done = False  # metadata (after messageStop) was seen

    def feed(self, event: str, data: dict[str, Any]) -> list[dict[str, Any]]:
        match event:
            case "messageStart":
                return [self._chunk({"content": ""})]
            case "contentBlockStart":
                return self._on_block_start(data)
            case "contentBlockDelta":
                return self._on_block_delta(data)
            case "contentBlockStop":
                return self._on_block_stop(data)
            case "messageStop":
                return self._on_message_stop(data)
            case "metadata":
                self.usage = usage_from_bedrock(data.get("usage"))
                self.done = True
        return []  # event types Bedrock may add later say nothing

    def usage_chunk(self) -> dict[str, Any]:
        chunk = self._envelope([])
        chunk["usage"] = openai_usage(self.usage or Usage(input_tokens=0, output_tokens=0))
        return chunk

    def _on_block_start(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        start = data.get("start")
        use = start.get("toolUse") if isinstance(start, dict) else None
        if not isinstance(use, dict):
            return []
        index = _int(data.get("contentBlockIndex"))
        return self._tool_start(index, use.get("toolUseId"), use.get("name"))

    def _on_block_delta(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            return []
        if "text" in delta:
            return self._text(delta.get("text"))
        index = _int(data.get("contentBlockIndex"))
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, dict):
            return self._reasoning(index, reasoning)
        use = delta.get("toolUse")
        return self._tool_input(index, use.get("input") if isinstance(use, dict) else None)

    def _on_block_stop(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        return self._block_stop(_int(data.get("contentBlockIndex")))

    def _on_message_stop(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        reason = self._finish_reason(finish_reason(data.get("stopReason")))
        return [*self._release(), self._chunk({}, reason)]

    def _reasoning(self, index: int, delta: dict[str, Any]) -> list[dict[str, Any]]:
        """Claude's thinking: each text piece a ``reasoning_content`` chunk; the block whole
        in ``thinking_blocks`` at its contentBlockStop."""
        if isinstance(delta.get("redactedContent"), str):
            self._thinking[index] = {"type": "redacted_thinking", "data": delta["redactedContent"]}
            return []
        thought = self._thinking.setdefault(
            index, {"type": "thinking", "thinking": "", "signature": ""}
        )
        if isinstance(delta.get("signature"), str):
            thought["signature"] = str(thought.get("signature", "")) + delta["signature"]
        text = delta.get("text")
        if not isinstance(text, str) or not text or thought["type"] != "thinking":
            return []
        thought["thinking"] = str(thought["thinking"]) + text
        return [self._chunk({"reasoning_content": text})]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
