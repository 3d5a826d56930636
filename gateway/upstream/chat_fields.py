"""Checks of an OpenAI chat request that every provider translating it shares (pure):
whether a field holds its default (the ``REFUSED_UNLESS_DEFAULT`` tables of the providers'
options modules), the 400 for the first one that does not, the requested output length,
the text of a content given as a string or as text parts, the function tools, the tool calls
of a conversation, and what response_format asks for.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from gateway.domain.errors import TranslationError

Default = Callable[[Any], bool]  # whether a field's value asks for nothing a provider lacks


def absent(value: Any) -> bool:
    return value is None


def off(value: Any) -> bool:
    return value is None or value is False


def zero(value: Any) -> bool:
    return value is None or (value == 0 and not isinstance(value, bool))


def empty(value: Any) -> bool:
    return value is None or value == {}


def no_functions(value: Any) -> bool:
    return value is None or value == []


def text_only(value: Any) -> bool:
    return value is None or value == ["text"]


def one_of(*defaults: Any) -> Default:
    return lambda value: value is None or value in defaults


def refuse_unless_default(
    body: Mapping[str, Any], table: Mapping[str, Default], served_by: str
) -> None:
    """A 400 for the first field of ``table`` whose value is not its default."""
    for field, is_default in table.items():
        if not is_default(body.get(field)):
            raise TranslationError(
                f"'{field}' is not supported by this model (served by {served_by}); "
                "leave it out or use a model of another provider",
                field,
            )


def max_tokens(body: Mapping[str, Any]) -> int | None:
    """``max_completion_tokens``, else ``max_tokens`` (a positive integer), else None."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TranslationError(f"{key} must be a positive integer", key)
        return value
    return None


def text_parts(content: Any, param: str) -> list[str]:
    """Plain text of a string or a list of text parts; empty strings dropped."""
    if content is None:
        return []
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, list):
        raise TranslationError("content must be a string or an array of parts", param)
    texts = [part_text(part, f"{param}[{j}]") for j, part in enumerate(content)]
    return [t for t in texts if t]


def part_text(part: Any, param: str) -> str:
    if not isinstance(part, dict) or part.get("type") != "text":
        raise TranslationError("only text parts are allowed here", param)
    text = part.get("text")
    if not isinstance(text, str):
        raise TranslationError("a text part needs a string text", f"{param}.text")
    return text


def function_tools(tools: Any) -> Iterator[tuple[int, dict[str, Any]]]:
    """Each tool's index and ``function`` (its ``name`` a string); only function tools."""
    if tools is None:
        return
    if not isinstance(tools, list):
        raise TranslationError("tools must be an array", "tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function":
            raise TranslationError("only function tools are supported", f"tools[{i}].type")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise TranslationError("a function tool needs a name", f"tools[{i}].function")
        yield i, function


def tool_call_of(call: Any, param: str) -> tuple[str, str, dict[str, Any]]:
    """An assistant message's tool call: its id, its function's name and its arguments
    decoded (an object; "" or none is ``{}``, as clients send argument-less calls)."""
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(call, dict) or not isinstance(function, dict):
        raise TranslationError("a tool call needs a function", param)
    call_id, name = call.get("id"), function.get("name")
    if not isinstance(call_id, str) or not call_id:
        raise TranslationError("a tool call needs an id", f"{param}.id")
    if not isinstance(name, str) or not name:
        raise TranslationError("a tool call needs a function name", f"{param}.function.name")
    arguments = function.get("arguments")
    at = f"{param}.function.arguments"
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return call_id, name, {}
    if not isinstance(arguments, str):
        raise TranslationError("tool call arguments must be a JSON string", at)
    try:
        decoded = json.loads(arguments)
    except json.JSONDecodeError as exc:
        raise TranslationError(f"tool call arguments are not valid JSON: {exc}", at) from exc
    if not isinstance(decoded, dict):
        raise TranslationError("tool call arguments must be a JSON object", at)
    return call_id, name, decoded


def json_format(value: Any) -> tuple[str, dict[str, Any]] | None:
    """What ``response_format`` asks for: None (text, or nothing asked), else its type
    (``json_object``, ``json_schema``) and its ``json_schema`` object (``name``,
    ``schema``...; empty for a json_object)."""
    if value is None:
        return None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind == "text":
        return None
    if kind == "json_object":
        return kind, {}
    if kind != "json_schema":
        raise TranslationError(
            "response_format.type must be 'text', 'json_object' or 'json_schema'",
            "response_format.type",
        )
    spec = value.get("json_schema")
    if not isinstance(spec, dict):
        raise TranslationError("response_format.json_schema must be an object", "response_format")
    return kind, spec
