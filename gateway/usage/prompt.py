"""A request's prompt tokens: at least what the body can make the upstream read (pure).

The text a model reads (messages, input items, prompts, instructions, tool calls)
is counted by the counter, framed as OpenAI's cookbook frames chat messages;
tools by their JSON, as before. Everything else the body carries upstream is
counted by its size (``uncounted.py``): so a large schema, file or unknown field
is held and charged by what it can cost, and no body can make the upstream's
prompt exceed the count by more than the tokenizers differ. An image, which the
upstream prices in its own units, counts the most one image can cost
(``uncounted.IMAGE_TOKEN_BOUND``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import msgspec

from gateway.domain.model import Endpoint
from gateway.usage.tokens import TextCounter
from gateway.usage.uncounted import field_size, json_size, part_rest, rest_of, top_level_rest

# tiktoken's per-message framing, from OpenAI's cookbook "How to count tokens".
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
TOKENS_REPLY_PRIMING = 3

_MESSAGE_TEXTS = ("role", "name")
_ITEM_TEXTS = ("role", "name", "arguments")
_ITEM_PARTS = ("content", "output")


def count_request_tokens(
    counter: TextCounter, body: Mapping[str, Any], endpoint: Endpoint, model_name: str
) -> int:
    """Prompt tokens of a request body sent to ``endpoint``: its text counted, the rest of
    the body by its size.

    Embeddings count ``input``, completions ``prompt``, /v1/responses ``instructions``,
    ``input`` (and ``tools``); chat completions (plain, tools, vision, streamed) count
    ``messages`` (and ``tools``), Anthropic's /v1/messages ``system`` too.
    """
    if endpoint is Endpoint.RESPONSES:
        return _count_responses(counter, body, model_name)
    if endpoint is Endpoint.MESSAGES:
        return _count_messages(counter, body, model_name)
    if endpoint is Endpoint.EMBEDDINGS:
        rest = top_level_rest(body, ("input",))
        return rest + _count_prompt(counter, body.get("input"), model_name)
    if endpoint is Endpoint.COMPLETIONS:
        rest = top_level_rest(body, ("prompt",))
        prompt = body.get("prompt")
        if prompt is None:  # OpenAI's default prompt "<|endoftext|>": one special token
            return rest + 1
        return rest + _count_prompt(counter, prompt, model_name)
    return _count_chat(counter, body, model_name)


def _count_prompt(counter: TextCounter, prompt: Any, model_name: str) -> int:
    """A string, a list of strings, a token array or a list of token arrays."""
    if isinstance(prompt, str):
        return counter.count_text(prompt, model_name)
    if not isinstance(prompt, list):
        return json_size(prompt)
    total = 0
    for item in prompt:
        if isinstance(item, str):
            total += counter.count_text(item, model_name)
        elif isinstance(item, int):
            total += 1  # one token id
        elif isinstance(item, list):
            total += len(item)  # a token array
        else:
            total += json_size(item)
    return total


def _count_chat(counter: TextCounter, body: Mapping[str, Any], model_name: str) -> int:
    total = top_level_rest(body, ("messages", "tools"))
    total += _count_tools(counter, body.get("tools"), model_name)
    messages = body.get("messages")
    if not isinstance(messages, list):
        return total + field_size("messages", messages)
    total += TOKENS_REPLY_PRIMING
    for message in messages:
        if not isinstance(message, Mapping):
            total += json_size(message)
            continue
        total += TOKENS_PER_MESSAGE
        for text in _message_texts(message):
            total += counter.count_text(text, model_name)
        if isinstance(message.get("name"), str):
            total += TOKENS_PER_NAME
        total += _message_rest(message)
    return total


def _count_messages(counter: TextCounter, body: Mapping[str, Any], model_name: str) -> int:
    """/v1/messages: its ``system`` (a string or text blocks) framed as one message, then
    the rest as chat's; blocks that are not text (tool use and results) count by size."""
    system = body.get("system")
    total = _count_chat(counter, {k: v for k, v in body.items() if k != "system"}, model_name)
    if isinstance(system, str):
        return total + TOKENS_PER_MESSAGE + counter.count_text(system, model_name)
    if not isinstance(system, list):
        return total + field_size("system", system)
    total += TOKENS_PER_MESSAGE + _parts_rest("system", system)
    return total + sum(counter.count_text(t, model_name) for t in _part_texts(system))


def _count_tools(counter: TextCounter, tools: Any, model_name: str) -> int:
    """Tools by their JSON: the upstream renders the schemas its own way; JSON is a fair proxy."""
    if isinstance(tools, list):
        return counter.count_text(_json_text(tools), model_name) if tools else 0
    return field_size("tools", tools)


def _count_responses(counter: TextCounter, body: Mapping[str, Any], model_name: str) -> int:
    """/v1/responses: ``instructions`` and each ``input`` item framed as a chat message is
    (a string ``input`` is one user message), plus the tools' JSON."""
    total = TOKENS_REPLY_PRIMING + top_level_rest(body, ("instructions", "input", "tools"))
    total += _count_tools(counter, body.get("tools"), model_name)
    instructions = body.get("instructions")
    if isinstance(instructions, str):
        total += TOKENS_PER_MESSAGE + counter.count_text(instructions, model_name)
    else:
        total += field_size("instructions", instructions)
    items = body.get("input")
    if isinstance(items, str):
        return total + TOKENS_PER_MESSAGE + counter.count_text(items, model_name)
    if not isinstance(items, list):
        return total + field_size("input", items)
    for item in items:
        if isinstance(item, Mapping):
            total += TOKENS_PER_MESSAGE + _item_rest(item)
            total += sum(counter.count_text(t, model_name) for t in _item_texts(item))
        else:
            total += json_size(item)
    return total


def _message_rest(message: Mapping[str, Any]) -> int:
    """A chat message beyond its counted text: its other fields, its content's other parts,
    its tool calls beyond their names and arguments."""
    total = rest_of(message, _MESSAGE_TEXTS, walked=("content", "tool_calls"))
    total += _parts_rest("content", message.get("content"))
    tool_calls = message.get("tool_calls")
    if not isinstance(tool_calls, list):
        return total + field_size("tool_calls", tool_calls)
    for call in tool_calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(function, Mapping):
            total += rest_of(call, walked=("function",))
            total += rest_of(function, ("name", "arguments"))
        else:
            total += json_size(call)
    return total


def _item_rest(item: Mapping[str, Any]) -> int:
    """A Responses input item beyond its counted text."""
    total = rest_of(item, _ITEM_TEXTS, walked=_ITEM_PARTS)
    return total + sum(_parts_rest(key, item.get(key)) for key in _ITEM_PARTS)


def _parts_rest(key: str, value: Any) -> int:
    """A content field beyond its text: none for a string (counted), each part's rest for a
    list, the whole field for anything else."""
    if value is None or isinstance(value, str):
        return 0
    if isinstance(value, list):
        return sum(part_rest(part) for part in value)
    return field_size(key, value)


def _item_texts(item: Mapping[str, Any]) -> Iterable[str]:
    """The texts of one Responses input item: a message's, a function call's name and
    arguments, a function call output."""
    for key in _ITEM_TEXTS:
        value = item.get(key)
        if isinstance(value, str):
            yield value
    for key in _ITEM_PARTS:
        yield from _part_texts(item.get(key))


def _json_text(value: Any) -> str:
    try:
        return msgspec.json.encode(value).decode()
    except (msgspec.EncodeError, TypeError, UnicodeDecodeError, OverflowError):
        return ""  # not JSON data: nothing sensible to count


def _message_texts(message: Mapping[str, Any]) -> Iterable[str]:
    for key in _MESSAGE_TEXTS:
        value = message.get(key)
        if isinstance(value, str):
            yield value
    yield from _part_texts(message.get("content"))
    tool_calls = message.get("tool_calls")
    if isinstance(tool_calls, list):
        for call in tool_calls:
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                for key in ("name", "arguments"):
                    if isinstance(function.get(key), str):
                        yield function[key]


def _part_texts(content: Any) -> Iterable[str]:
    """A string content, or the text of each part of a list (images are the upstream's to
    price, in its own units; other parts count by size, in ``part_rest``)."""
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                yield part["text"]
