"""The Chat Completions chunks a provider's stream translator writes (pure): the one
envelope every translated stream's events have, the first one carrying the role."""

from __future__ import annotations

from typing import Any


class ChatChunks:
    """A stream translator's chunk writing. The translator sets the four fields (and may
    change ``_id`` and ``_model`` once the provider names them)."""

    _id: str
    _model: str
    _created: int
    _role_sent: bool

    def _chunk(self, delta: dict[str, Any], reason: str | None = None) -> dict[str, Any]:
        if not self._role_sent:
            delta = {"role": "assistant", **delta}
            self._role_sent = True
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}
        return self._envelope([choice])

    def _envelope(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": choices,
        }


class ToolChunks(ChatChunks):
    """The content blocks of Claude's streams (Anthropic's Messages events, Bedrock's
    ConverseStream) as chunks: text, tool calls, thinking blocks, and the response tool.

    ``response_tool``: the tool standing in for response_format, whose streamed input alone
    is the answer's content (and calling it alone is a plain stop). With one, text is held
    until the stream shows whether that tool is called: when it is, the held text and any
    text after it are dropped (the content must parse as JSON); otherwise the text is sent
    before the first client tool call, or before the finish chunk. A thinking block the
    translator fills in ``_thinking`` is sent whole, with its signature, in
    ``thinking_blocks`` when the block stops (what a later turn sends back)."""

    def __init__(self, response_tool: str | None) -> None:
        self._response_tool = response_tool
        self._tool_index: dict[int, int] = {}  # the stream's block index -> OpenAI tool index
        self._answer_blocks: dict[int, bool] = {}  # response tool blocks -> input sent yet
        self._held: list[str] = []  # text held while the response tool may still come
        self._thinking: dict[int, dict[str, Any]] = {}  # thinking blocks by block index

    def _tool_start(self, index: int, call_id: Any, name: Any) -> list[dict[str, Any]]:
        if self._response_tool is not None and name == self._response_tool:
            self._answer_blocks[index] = False
            self._held.clear()  # the answer is the tool's JSON alone
            return []
        released = self._release()
        tool_index = len(self._tool_index)
        self._tool_index[index] = tool_index
        call = {
            "index": tool_index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        return [*released, self._chunk({"tool_calls": [call]})]

    def _tool_input(self, index: int, partial: Any) -> list[dict[str, Any]]:
        """A piece of a tool's input (partial JSON): the answer's content for the response
        tool, else the call's arguments."""
        if not isinstance(partial, str) or not partial:
            return []
        if index in self._answer_blocks:
            self._answer_blocks[index] = True
            return [self._chunk({"content": partial})]
        tool_index = self._tool_index.get(index)
        if tool_index is None:
            return []
        call = {"index": tool_index, "function": {"arguments": partial}}
        return [self._chunk({"tool_calls": [call]})]

    def _block_stop(self, index: int) -> list[dict[str, Any]]:
        thought = self._thinking.pop(index, None)
        if thought is not None:
            return [self._chunk({"thinking_blocks": [thought]})]
        if self._answer_blocks.get(index) is False:  # no input streamed: still an object
            self._answer_blocks[index] = True
            return [self._chunk({"content": "{}"})]
        return []

    def _finish_reason(self, reason: str | None) -> str | None:
        if reason == "tool_calls" and self._answer_blocks and not self._tool_index:
            return "stop"  # only the response tool was called: that is the answer
        return reason

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
