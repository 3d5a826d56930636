"""OpenAI tools, tool_choice and response_format as Anthropic tools (pure).

Claude has no JSON output mode that every model takes, so ``response_format``
becomes a tool whose ``input_schema`` is the requested schema (an open object for
``json_object``), and the model is made to answer through it. The translation
of the answer turns that tool's input back into ``message.content`` (a JSON
string, ``finish_reason: "stop"``), as OpenAI's structured outputs answer.

With the client's own ``tools`` beside ``response_format`` the answer must be
either tool calls or the JSON answer, as on OpenAI:

- ``tool_choice`` absent or ``auto``: the response tool joins the client's tools
  and Anthropic's ``any`` makes the model call one of them, so it never answers
  in free text;
- ``none``: the response tool is forced (the client's tools stay described);
- ``required`` or a named function: the answer is tool calls by the client's own
  choice, so the response tool is left out.

Refusing the combination instead would break agent frameworks that ask for tools
and a structured final answer in one request.

``strict`` (on ``json_schema`` and on function tools) has no counterpart in
Anthropic's tool use and is not sent: the model follows the schema without a
guarantee, and client libraries that parse the answer (openai's ``parse``)
validate it themselves. A schema whose root is not an object cannot be a tool's
input and is refused, as is a ``response_format`` named like one of the tools.

When the answer tool is called, its input alone is the answer: text blocks the model
wrote around it ("Let me check.") are dropped, in whole answers and streams, so the
content always parses. ``response_format`` asking for JSON with a ``reasoning_effort``:
extended thinking cannot force a tool, so thinking is left out (``reasoning_effort``
listed as ignored, thinking.py) and the answer is still the forced tool's JSON.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from gateway.domain.errors import TranslationError
from gateway.upstream.chat_fields import function_tools, json_format

JSON_OBJECT_TOOL = "json_object"
_OPEN_OBJECT: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": True}
_TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_DESCRIPTION = "Give your final answer as this tool's input; it is the whole answer."


@dataclass(frozen=True, slots=True)
class ToolPlan:
    tools: list[dict[str, Any]]
    tool_choice: dict[str, Any] | None
    response_tool: str | None  # the tool standing in for response_format, when sent


def plan_tools(body: dict[str, Any]) -> ToolPlan:
    tools = _tools(body.get("tools"))
    wanted = body.get("tool_choice")
    parallel = body.get("parallel_tool_calls")
    choice = _tool_choice(wanted, parallel) if tools else None
    response = _response_tool(body.get("response_format"))
    if response is None or (tools and (wanted == "required" or isinstance(wanted, dict))):
        return ToolPlan(tools, choice, None)
    name = response["name"]
    if any(tool["name"] == name for tool in tools):
        raise TranslationError(
            f"response_format's name '{name}' is also the name of one of the tools; rename one",
            "response_format.json_schema.name",
        )
    if tools and wanted in (None, "auto"):
        forced: dict[str, Any] = {"type": "any"}
        if parallel is False:
            forced["disable_parallel_tool_use"] = True
    else:  # one call of the response tool: one JSON answer
        forced = {"type": "tool", "name": name, "disable_parallel_tool_use": True}
    return ToolPlan([*tools, response], forced, name)


def _response_tool(value: Any) -> dict[str, Any] | None:
    asked = json_format(value)
    if asked is None:
        return None
    kind, spec = asked
    if kind == "json_object":
        return {"name": JSON_OBJECT_TOOL, "description": _DESCRIPTION, "input_schema": _OPEN_OBJECT}
    name = spec.get("name")
    if not isinstance(name, str) or not _TOOL_NAME.match(name):
        raise TranslationError(
            "response_format.json_schema.name must be 1-64 letters, digits, '_' or '-'",
            "response_format.json_schema.name",
        )
    description = spec.get("description")
    return {
        "name": name,
        "description": description if isinstance(description, str) else _DESCRIPTION,
        "input_schema": _input_schema(spec.get("schema")),
    }


def _input_schema(schema: Any) -> dict[str, Any]:
    """The schema as a tool's input schema, which Anthropic requires to be an object."""
    param = "response_format.json_schema.schema"
    if schema is None:
        return _OPEN_OBJECT
    if not isinstance(schema, dict):
        raise TranslationError("the schema must be a JSON Schema object", param)
    kind = schema.get("type", "object")
    if kind != "object":
        raise TranslationError(
            "for this model (served by Anthropic) the schema's root must be an object "
            f"(type 'object'), not {kind!r}; wrap the value in an object property",
            param,
        )
    return {**schema, "type": "object"}


def _tools(tools: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _, function in function_tools(tools):
        schema = function.get("parameters") or {"type": "object", "properties": {}}
        entry: dict[str, Any] = {"name": function["name"], "input_schema": schema}
        if isinstance(function.get("description"), str):
            entry["description"] = function["description"]
        out.append(entry)
    return out


def _tool_choice(choice: Any, parallel: Any) -> dict[str, Any] | None:
    result: dict[str, Any] | None
    if choice is None:
        result = None
    elif choice in ("auto", "none"):
        result = {"type": choice}
    elif choice == "required":
        result = {"type": "any"}
    elif isinstance(choice, dict) and isinstance(choice.get("function"), dict):
        name = choice["function"].get("name")
        if not isinstance(name, str) or not name:
            raise TranslationError("tool_choice needs a function name", "tool_choice")
        result = {"type": "tool", "name": name}
    else:
        raise TranslationError("unsupported tool_choice", "tool_choice")
    if parallel is False:
        result = result or {"type": "auto"}
        if result["type"] != "none":
            result["disable_parallel_tool_use"] = True
    return result
