"""OpenAI tools, tool_choice and response_format as Converse's ``toolConfig`` (pure).

The plan is Claude's (``gateway.upstream.anthropic.tools``): ``response_format`` becomes
a tool whose input schema is the requested schema, forced with ``toolChoice.tool`` (or
``any`` beside the client's own tools under ``auto``), and its input alone is the
answer's content. Here the plan is written in Converse's shape:
``tools[].toolSpec {name, description, inputSchema.json}`` and ``toolChoice``
``auto`` / ``any`` / ``tool {name}``.

Converse has no ``tool_choice: "none"``: the tools are then left out, unless the
conversation already holds tool calls or results (Converse needs the tools described
then), where it is a 400 naming ``tool_choice``.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import TranslationError
from gateway.upstream.anthropic.tools import plan_tools


def plan_tool_config(
    body: dict[str, Any], has_tool_blocks: bool
) -> tuple[dict[str, Any] | None, str | None]:
    """(``toolConfig`` or None, the response tool's name or None)."""
    plan = plan_tools(body)
    if not plan.tools:
        return None, None
    choice = plan.tool_choice
    if choice is not None and choice.get("type") == "none":
        if has_tool_blocks:
            raise TranslationError(
                "tool_choice 'none' cannot be sent to AWS Bedrock in a conversation that "
                "holds tool calls (Converse has no 'none'); use 'auto'",
                "tool_choice",
            )
        return None, None
    config: dict[str, Any] = {"tools": [_tool_spec(tool) for tool in plan.tools]}
    if choice is not None:
        config["toolChoice"] = _tool_choice(choice)
    return config, plan.response_tool


def _tool_spec(tool: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = {"name": tool["name"], "inputSchema": {"json": tool["input_schema"]}}
    description = tool.get("description")
    if isinstance(description, str) and description:
        spec["description"] = description
    return {"toolSpec": spec}


def _tool_choice(choice: dict[str, Any]) -> dict[str, Any]:
    kind = choice["type"]
    if kind == "tool":
        return {"tool": {"name": choice["name"]}}
    return {kind: {}}  # auto, any
