"""A Chat Completions stream as the Responses API's typed events (pure).

Feed it the chat chunks in order; it answers the events to send, each with its
``sequence_number``: ``response.created`` and ``response.in_progress`` first, then for
text ``response.output_item.added``, ``response.content_part.added``,
``response.output_text.delta``… and, when the item ends, ``response.output_text.done``,
``response.content_part.done``, ``response.output_item.done``; for each function call
``response.output_item.added``, ``response.function_call_arguments.delta``…,
``response.function_call_arguments.done``, ``response.output_item.done``; at the end
``response.completed`` (or ``response.incomplete``) carrying the whole response and its
usage. Items are sent one after the other, as OpenAI sends them: an item ends when the
next one begins.

A provider's reasoning (a chat chunk's ``reasoning_content`` text, then the whole block in
``thinking_blocks``: the Anthropic adapter's extended thinking) is a ``reasoning`` item:
``response.output_item.added``, with ``reasoning.summary`` asked
``response.reasoning_summary_part.added``, ``response.reasoning_summary_text.delta``…,
``response.reasoning_summary_text.done``, ``response.reasoning_summary_part.done``, then
``response.output_item.done`` carrying ``encrypted_content`` when ``include`` asked for it.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.responses.answer import (
    finish,
    function_call_item,
    message_item,
    new_id,
    output_text_part,
    reasoning_item,
    reasoning_tokens_of,
    skeleton,
    usage_json,
)
from gateway.responses.request import namespaced_names, summary_asked
from gateway.usage.openai_usage import usage_from_openai

Event = dict[str, Any]


@dataclass(slots=True)
class _Item:
    output_index: int
    item_id: str
    kind: str  # "message" | "function_call" | "reasoning"
    text: list[str] = field(default_factory=list)  # the text, the arguments, the reasoning
    refusal: list[str] = field(default_factory=list)
    call_id: str = ""
    name: str = ""
    done: bool = False
    block: dict[str, Any] | None = None  # reasoning: the provider's whole block, once sent


class ResponsesStreamWriter:
    def __init__(self, request: Mapping[str, Any], created_at: int, model: str) -> None:
        self._request = request
        self._names = namespaced_names(request.get("tools"))
        self._summary = summary_asked(request)
        self.response = skeleton(request, new_id("resp"), created_at, model)
        self._sequence = 0
        self._items: list[_Item] = []
        self._open: _Item | None = None
        self._calls: dict[int, _Item] = {}  # by the chat stream's tool call index
        self._usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.started = False
        self.ended = False

    def _event(self, kind: str, **fields: Any) -> Event:
        event: Event = {"type": kind, **fields, "sequence_number": self._sequence}
        self._sequence += 1
        return event

    def start(self) -> list[Event]:
        self.started = True
        snapshot = copy.deepcopy(self.response)
        return [
            self._event("response.created", response=snapshot),
            self._event("response.in_progress", response=copy.deepcopy(snapshot)),
        ]

    def feed(self, chunk: Mapping[str, Any]) -> list[Event]:
        """The events for one chat chunk (``start()`` first)."""
        out: list[Event] = []
        model = chunk.get("model")
        if isinstance(model, str) and model and not self.response["model"]:
            self.response["model"] = model
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self._usage = usage
        choices = chunk.get("choices")
        for choice in choices if isinstance(choices, list) else []:
            if not isinstance(choice, dict):
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self._delta(delta, out)
            if isinstance(choice.get("finish_reason"), str):
                self.finish_reason = choice["finish_reason"]
        return out

    def _delta(self, delta: Mapping[str, Any], out: list[Event]) -> None:
        thought = delta.get("reasoning_content")
        if isinstance(thought, str) and thought:
            self._thought(thought, out)
        blocks = delta.get("thinking_blocks")
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict):
                self._thought_block(block, out)
        content = delta.get("content")
        if isinstance(content, str) and content:
            item = self._message(out)
            item.text.append(content)
            out.append(
                self._event(
                    "response.output_text.delta",
                    item_id=item.item_id,
                    output_index=item.output_index,
                    content_index=0,
                    delta=content,
                    logprobs=[],
                )
            )
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._message(out).refusal.append(refusal)
        calls = delta.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict):
                self._call_delta(call, out)

    def _reasoning(self, out: list[Event]) -> _Item:
        if self._open is not None and self._open.kind == "reasoning" and self._open.block is None:
            return self._open
        return self._begin("reasoning", new_id("rs"), out)

    def _thought(self, text: str, out: list[Event]) -> None:
        item = self._reasoning(out)
        where = {"item_id": item.item_id, "output_index": item.output_index, "summary_index": 0}
        if self._summary and not item.text:
            part = {"type": "summary_text", "text": ""}
            out.append(self._event("response.reasoning_summary_part.added", **where, part=part))
        item.text.append(text)
        if self._summary:
            out.append(self._event("response.reasoning_summary_text.delta", **where, delta=text))

    def _thought_block(self, block: dict[str, Any], out: list[Event]) -> None:
        """The provider's whole reasoning block: the open reasoning item ends with it."""
        item = self._reasoning(out)
        item.block = block
        if not item.text and isinstance(block.get("thinking"), str) and block["thinking"]:
            self._thought(block["thinking"], out)  # the text came whole, not in deltas
        self._close(out)

    def _message(self, out: list[Event]) -> _Item:
        if self._open is not None and self._open.kind == "message":
            return self._open
        item = self._begin("message", new_id("msg"), out)
        part = output_text_part("")
        out.append(
            self._event(
                "response.content_part.added",
                item_id=item.item_id,
                output_index=item.output_index,
                content_index=0,
                part=part,
            )
        )
        return item

    def _call_delta(self, call: Mapping[str, Any], out: list[Event]) -> None:
        index = call.get("index")
        index = index if isinstance(index, int) else 0
        function = call.get("function")
        function = function if isinstance(function, dict) else {}
        item = self._calls.get(index)
        if item is None:
            item = _Item(0, new_id("fc"), "function_call")
            item.call_id = str(call.get("id") or new_id("call"))
            item.name = str(function.get("name") or "")
            self._calls[index] = item
            self._begin("function_call", item.item_id, out, item)
        arguments = function.get("arguments")
        if isinstance(arguments, str) and arguments:
            item.text.append(arguments)
            if not item.done:
                out.append(
                    self._event(
                        "response.function_call_arguments.delta",
                        item_id=item.item_id,
                        output_index=item.output_index,
                        delta=arguments,
                    )
                )

    def _begin(self, kind: str, item_id: str, out: list[Event], item: _Item | None = None) -> _Item:
        self._close(out)
        if item is None:
            item = _Item(len(self._items), item_id, kind)
        item.output_index = len(self._items)
        self._items.append(item)
        self._open = item
        out.append(
            self._event(
                "response.output_item.added",
                output_index=item.output_index,
                item=self._item_json(item, "in_progress", partial=True),
            )
        )
        return item

    def _close(self, out: list[Event]) -> None:
        item, self._open = self._open, None
        if item is None or item.done:
            return
        item.done = True
        status = "incomplete" if self.finish_reason == "length" else "completed"
        where = {"item_id": item.item_id, "output_index": item.output_index}
        if item.kind == "reasoning":
            text = "".join(item.text)
            if self._summary and text:
                part = {"type": "summary_text", "text": text}
                out.append(
                    self._event(
                        "response.reasoning_summary_text.done", **where, summary_index=0, text=text
                    )
                )
                out.append(
                    self._event(
                        "response.reasoning_summary_part.done", **where, summary_index=0, part=part
                    )
                )
        elif item.kind == "message":
            text = "".join(item.text)
            out.append(
                self._event(
                    "response.output_text.done", **where, content_index=0, text=text, logprobs=[]
                )
            )
            out.append(
                self._event(
                    "response.content_part.done",
                    **where,
                    content_index=0,
                    part=output_text_part(text),
                )
            )
        else:
            out.append(
                self._event(
                    "response.function_call_arguments.done",
                    **where,
                    name=self._names.get(item.name, ("", item.name))[1],
                    arguments="".join(item.text),
                )
            )
        out.append(
            self._event(
                "response.output_item.done",
                output_index=item.output_index,
                item=self._item_json(item, status),
            )
        )

    def _item_json(self, item: _Item, status: str, *, partial: bool = False) -> dict[str, Any]:
        if item.kind == "reasoning":
            if partial:
                return {"type": "reasoning", "id": item.item_id, "summary": [], "status": status}
            block = item.block or {"type": "thinking", "thinking": "".join(item.text)}
            return reasoning_item(item.item_id, block, self._request, status)
        if item.kind == "message":
            if partial:
                return {
                    "type": "message",
                    "id": item.item_id,
                    "status": status,
                    "role": "assistant",
                    "content": [],
                }
            refusal = "".join(item.refusal) if item.refusal else None
            return message_item(item.item_id, "".join(item.text), refusal, status)
        arguments = "" if partial else "".join(item.text)
        return function_call_item(
            item.item_id, item.call_id, item.name, arguments, status, self._names
        )

    def finish(self) -> list[Event]:
        """The last events: the open item's end, then ``response.completed`` (or
        ``response.incomplete``) with every item and the usage."""
        out: list[Event] = []
        if not self._items:  # an answer without a word: still one (empty) message
            self._message(out)
        self._close(out)
        self.ended = True
        status = "incomplete" if self.finish_reason == "length" else "completed"
        self.response["output"] = [self._item_json(item, status) for item in self._items]
        usage = usage_from_openai(self._usage)
        reported = usage_json(usage, reasoning_tokens_of(self._usage)) if usage else None
        response = finish(self.response, self.finish_reason, reported)
        kind = "response.incomplete" if response["status"] == "incomplete" else "response.completed"
        out.append(self._event(kind, response=response))
        return out

    def error(self, code: str | None, message: str, param: str | None = None) -> Event:
        """The stream's end on an error (an ``error`` event, as OpenAI sends one)."""
        self.ended = True
        return self._event("error", code=code, message=message, param=param)
