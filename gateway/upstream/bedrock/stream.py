"""ConverseStream events turned into OpenAI chat.completion.chunk dicts.

Pure and stateful per stream: the adapter decodes the event-stream frames (botocore's
decoder) and feeds each (event type, JSON payload) here. Converse sends ``messageStart``,
then per content block ``contentBlockStart`` (tool calls only), ``contentBlockDelta``
(``text``, ``toolUse.input`` as partial JSON, ``reasoningContent``) and
``contentBlockStop``, then ``messageStop`` (the stop reason) and ``metadata`` (usage),
which ends the stream.

With a response tool (``response_format``), text is held until the stream shows whether
that tool is called: when it is, its input alone is the content; otherwise the text is
sent before the first client tool call or the finish chunk.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.usage import Usage
from gateway.upstream.bedrock.translate import finish_reason, openai_usage, usage_from_bedrock
from gateway.upstream.chunks import ChatChunks


class StreamTranslator(ChatChunks):
    def __init__(
        self, model_name: str, created: int, chunk_id: str, response_tool: str | None = None
    ) -> None:
        self._model = model_name
        self._created = created
        self._id = chunk_id
        self._response_tool = response_tool
        self._role_sent = False
        self._tool_index: dict[int, int] = {}  # Converse block index -> OpenAI tool index
        self._answer_blocks: dict[int, bool] = {}  # response tool blocks -> input sent yet
        self._held: list[str] = []
        self._thinking: dict[int, dict[str, Any]] = {}  # reasoning blocks being streamed
        self._reason: str | None = None
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
        if self._response_tool is not None and use.get("name") == self._response_tool:
            self._answer_blocks[index] = False
            self._held.clear()  # the answer is the tool's JSON alone
            return []
        released = self._release()
        tool_index = len(self._tool_index)
        self._tool_index[index] = tool_index
        call = {
            "index": tool_index,
            "id": use.get("toolUseId"),
            "type": "function",
            "function": {"name": use.get("name"), "arguments": ""},
        }
        return [*released, self._chunk({"tool_calls": [call]})]

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
        partial = use.get("input") if isinstance(use, dict) else None
        if not isinstance(partial, str) or not partial:
            return []
        if index in self._answer_blocks:
            self._answer_blocks[index] = True
            return [self._chunk({"content": partial})]
        tool_index = self._tool_index.get(index)
        if tool_index is None:
            return []
        return [
            self._chunk({"tool_calls": [{"index": tool_index, "function": {"arguments": partial}}]})
        ]

    def _on_block_stop(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        index = _int(data.get("contentBlockIndex"))
        thought = self._thinking.pop(index, None)
        if thought is not None:  # whole, with its signature: what a later turn sends back
            return [self._chunk({"thinking_blocks": [thought]})]
        if self._answer_blocks.get(index) is False:  # an empty answer is still an object
            self._answer_blocks[index] = True
            return [self._chunk({"content": "{}"})]
        return []

    def _on_message_stop(self, data: dict[str, Any]) -> list[dict[str, Any]]:
        reason = finish_reason(data.get("stopReason"))
        if reason == "tool_calls" and self._answer_blocks and not self._tool_index:
            reason = "stop"  # only the response tool was called: that is the answer
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

    def _text(self, text: Any) -> list[dict[str, Any]]:
        if not isinstance(text, str) or not text:
            return []
        if self._response_tool is None:
            return [self._chunk({"content": text})]
        if not self._answer_blocks:
            self._held.append(text)
        return []

    def _release(self) -> list[dict[str, Any]]:
        if not self._held or self._answer_blocks:
            return []
        text = "".join(self._held)
        self._held.clear()
        return [self._chunk({"content": text})]


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else -1
