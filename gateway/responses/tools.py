"""``tools`` and ``tool_choice`` of a ``POST /v1/responses`` body as chat's (pure).

Function tools pass as they are; ``namespace`` tools (function tools grouped under a name,
run by the client) become chat functions named ``<namespace>__<name>``, and
``namespaced_names`` gives the way back; an offered built-in tool is left out and listed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.responses.translation import Note, Unsupported

# Namespaced functions are offered to chat as ``<namespace>__<name>``.
NAMESPACE_SEPARATOR = "__"


def namespaced_names(tools: Any) -> dict[str, tuple[str, str]]:
    """The chat name of each function of the request's ``namespace`` tools, and the
    namespace and name it stands for."""
    names: dict[str, tuple[str, str]] = {}
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict) or tool.get("type") != "namespace":
            continue
        namespace = tool.get("name")
        for inner in tool.get("tools") or []:
            name = inner.get("name") if isinstance(inner, dict) else None
            if isinstance(namespace, str) and isinstance(name, str):
                names[f"{namespace}{NAMESPACE_SEPARATOR}{name}"] = (namespace, name)
    return names


def chat_tools(tools: Any, provider: str, note: Note) -> list[dict[str, Any]]:
    """Function tools as they are, a namespace's functions flattened; an offered built-in
    tool (run at OpenAI) is left out and listed; a custom tool is refused (it runs at the
    client, but its free-form input has no chat counterpart)."""
    out: list[dict[str, Any]] = []
    for index, tool in enumerate(tools or []):
        where = f"tools[{index}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == "function":
            out.append(_function_tool(tool, where))
        elif kind == "namespace":
            out.extend(_namespace_tools(tool, where))
        elif kind == "custom" or not isinstance(kind, str):
            raise Unsupported(
                where,
                f"A tool of type '{kind}' cannot be translated to Chat Completions for "
                f"provider '{provider}'; function and namespace tools can.",
            )
        else:  # a built-in tool: offered, not required, so leaving it out is safe
            note(f"tools[{kind}]")
    seen: set[str] = set()
    for entry in out:
        name = entry["function"]["name"]
        if name in seen:
            raise Unsupported(
                "tools", f"Two tools are offered to the model as '{name}'; rename one."
            )
        seen.add(name)
    return out


def _function_tool(tool: Mapping[str, Any], where: str, prefix: str = "") -> dict[str, Any]:
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise Unsupported(f"{where}.name", f"'{where}.name' must be a string.")
    function: dict[str, Any] = {"name": prefix + name}
    for key in ("description", "parameters", "strict"):
        if tool.get(key) is not None:
            function[key] = tool[key]
    return {"type": "function", "function": function}


def _namespace_tools(tool: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    namespace = tool.get("name")
    inner = tool.get("tools")
    if not isinstance(namespace, str) or not namespace or not isinstance(inner, list):
        raise Unsupported(where, f"'{where}' needs a 'name' and an array of 'tools'.")
    about = tool.get("description")
    out: list[dict[str, Any]] = []
    for index, function in enumerate(inner):
        at = f"{where}.tools[{index}]"
        kind = function.get("type") if isinstance(function, dict) else None
        if kind != "function":
            raise Unsupported(
                at,
                f"A namespace's tool of type '{kind}' cannot be translated; function tools can.",
            )
        entry = _function_tool(function, at, f"{namespace}{NAMESPACE_SEPARATOR}")
        if isinstance(about, str) and about:  # what the namespace is, for the model
            own = entry["function"].get("description")
            entry["function"]["description"] = f"[{namespace}: {about}] {own or ''}".strip()
        out.append(entry)
    return out


def chat_tool_choice(choice: Any, provider: str) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "function" and isinstance(choice.get("name"), str):
        name = choice["name"]
        namespace = choice.get("namespace")
        if isinstance(namespace, str) and namespace:
            name = f"{namespace}{NAMESPACE_SEPARATOR}{name}"
        return {"type": "function", "function": {"name": name}}
    if kind in ("allowed_tools", "custom", None) or not isinstance(kind, str):
        raise Unsupported(
            "tool_choice",
            f"A tool_choice of type '{kind}' cannot be translated: use auto, none, required "
            "or a function.",
        )
    raise Unsupported(
        "tool_choice",
        f"'tool_choice' requires the built-in tool '{kind}', which runs at OpenAI: provider "
        f"'{provider}' cannot run it. Offer it without requiring it (it is then left out), "
        "or use a model whose provider offers the Responses API.",
    )
