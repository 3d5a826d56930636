"""A ``POST /v1/messages`` body as a Chat Completions body (pure), for providers that are
not Anthropic's.

Each field of the Messages request is translated, refused (``Untranslatable``, naming the
parameter) when Chat Completions cannot express it, left out and listed (``ignored``)
when leaving it out cannot change what the model is asked (an offered server tool the
provider cannot run, ``thinking`` for a model that declares no ``reasoning``), or dropped
when it is a hint the other side has no use for (``cache_control``, ``metadata``,
earlier turns' thinking blocks). See docs/messages.md#translated-to-chat-completions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.domain.errors import GatewayException

# Read here: every other top-level field is refused by name (chat has no counterpart).
_HANDLED = frozenset(
    {
        "model",
        "messages",
        "system",
        "max_tokens",
        "temperature",
        "top_p",
        "stop_sequences",
        "stream",
        "tools",
        "tool_choice",
        "thinking",
        "output_config",
        "metadata",  # user_id only: the other side keeps no per-user state of Anthropic's
        "service_tier",  # Anthropic's tiers ("auto", "standard_only") are its own capacity
    }
)
# Left out and listed when set: asking for them cannot change what the model is asked.
# context_management asks Anthropic to clear old tool results from a long context; left
# out, the provider reads the context as the client sent it (Claude Code sends it).
_IGNORED = frozenset({"context_management"})
# A thinking budget as a reasoning effort (budgets below and up to each bound).
_EFFORTS = ((4096, "low"), (16384, "medium"))
_IMAGE_MEDIA = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_DROPPED_BLOCKS = frozenset({"thinking", "redacted_thinking"})  # earlier turns' reasoning


class Untranslatable(GatewayException):
    """A parameter Chat Completions cannot express: answered 400 naming it."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


@dataclass(slots=True)
class ChatRequest:
    body: dict[str, Any]
    ignored: list[str] = field(default_factory=list)  # left out, as the client named them


def to_chat(
    body: Mapping[str, Any], *, reasoning: bool, thinking_blocks: bool = False
) -> ChatRequest:
    """The chat body for ``body``; ``reasoning``: the model declares the capability, so
    ``thinking`` becomes ``reasoning_effort``; ``thinking_blocks``: the provider takes
    Claude's thinking blocks back (Bedrock), so earlier turns' go as an assistant
    message's ``thinking_blocks`` rather than being dropped."""
    ignored: list[str] = []
    for name, value in body.items():
        if value is None or name in _HANDLED:
            continue
        if name not in _IGNORED:
            raise Untranslatable(name, f"'{name}' has no Chat Completions counterpart.")
        ignored.append(name)
    out: dict[str, Any] = {"model": body.get("model")}
    messages = _messages(body.get("messages"), thinking_blocks)
    out["messages"] = [*_system(body.get("system")), *messages]
    for name in ("temperature", "top_p", "stream"):
        if body.get(name) is not None:
            out[name] = body[name]
    stops = body.get("stop_sequences")
    if stops:
        out["stop"] = stops
    effort = _effort(body.get("thinking"))
    config = _output_config(body.get("output_config"), out)
    asked = config or effort  # output_config.effort says how hard, thinking only that
    if asked is not None and reasoning:
        out["reasoning_effort"] = asked
    else:
        ignored.extend(
            name
            for name, value in (("thinking", effort), ("output_config.effort", config))
            if value is not None
        )
    # Reasoning models take max_completion_tokens (their reasoning counts in it, as
    # Anthropic's thinking counts in max_tokens); the others the older name.
    limit = "max_completion_tokens" if "reasoning_effort" in out else "max_tokens"
    if body.get("max_tokens") is not None:
        out[limit] = body["max_tokens"]
    _tools(body, out, ignored)
    return ChatRequest(out, ignored)


def _system(system: Any) -> list[dict[str, Any]]:
    if system is None or system == "" or system == []:
        return []
    return [{"role": "system", "content": _plain_text(system, "system")}]


def _plain_text(content: Any, param: str) -> str:
    """A string, or text blocks joined (their cache_control is a hint for Anthropic)."""
    if isinstance(content, str):
        return content
    texts = []
    for i, block in enumerate(content if isinstance(content, list) else []):
        if not isinstance(block, dict) or block.get("type") != "text":
            kind = block.get("type") if isinstance(block, dict) else None
            raise Untranslatable(f"{param}[{i}]", f"A {kind!r} block cannot be sent here.")
        texts.append(str(block.get("text") or ""))
    return "\n\n".join(texts)


def _messages(messages: Any, thinking_blocks: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, message in enumerate(messages if isinstance(messages, list) else []):
        role = message.get("role")
        param = f"messages[{i}]"
        content = message.get("content")
        if role == "system":  # mid-conversation, as Claude Code sends them: in place
            out.append({"role": "system", "content": _plain_text(content, f"{param}.content")})
        elif role == "user":
            out.extend(_user(content, f"{param}.content"))
        elif role == "assistant":
            out.append(_assistant(content, f"{param}.content", thinking_blocks))
        else:
            raise Untranslatable(f"{param}.role", f"Unknown role {role!r}.")
    return out


def _user(content: Any, param: str) -> list[dict[str, Any]]:
    """Tool results first, each a ``tool`` message (as chat requires them right after the
    assistant's calls), then the user's own parts."""
    if isinstance(content, str):
        return [{"role": "user", "content": content}]
    results: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for i, block in enumerate(content if isinstance(content, list) else []):
        kind = block.get("type")
        at = f"{param}[{i}]"
        if kind == "tool_result":
            results.append(_tool_result(block, at))
        elif kind == "text":
            parts.append({"type": "text", "text": block.get("text") or ""})
        elif kind == "image":
            parts.append(_image(block, at))
        elif kind not in _DROPPED_BLOCKS:
            raise Untranslatable(at, f"A {kind!r} block has no Chat Completions counterpart.")
    if parts:
        results.append({"role": "user", "content": parts})
    return results


def _image(block: Mapping[str, Any], param: str) -> dict[str, Any]:
    source = block.get("source") or {}
    kind = source.get("type")
    if kind == "url" and isinstance(source.get("url"), str):
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    media = source.get("media_type")
    if kind == "base64" and media in _IMAGE_MEDIA and isinstance(source.get("data"), str):
        return {"type": "image_url", "image_url": {"url": f"data:{media};base64,{source['data']}"}}
    raise Untranslatable(f"{param}.source", "Only base64 and url images can be translated.")


def _tool_result(block: Mapping[str, Any], param: str) -> dict[str, Any]:
    tool_use_id = block.get("tool_use_id")
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise Untranslatable(f"{param}.tool_use_id", "A tool_result needs its tool_use_id.")
    content = block.get("content")
    text = "" if content is None else _plain_text(content, f"{param}.content")
    if block.get("is_error"):  # chat's tool message has no error flag: the text says it
        text = f"Error: {text}" if text else "Error"
    return {"role": "tool", "tool_call_id": tool_use_id, "content": text}


def _assistant(content: Any, param: str, thinking_blocks: bool) -> dict[str, Any]:
    if isinstance(content, str):
        return {"role": "assistant", "content": content}
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    thoughts: list[dict[str, Any]] = []
    for i, block in enumerate(content if isinstance(content, list) else []):
        kind = block.get("type")
        if kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            function = {"name": block.get("name"), "arguments": arguments}
            calls.append({"id": block.get("id"), "type": "function", "function": function})
        elif kind in _DROPPED_BLOCKS:
            thoughts.append(dict(block))
        else:
            at = f"{param}[{i}]"
            raise Untranslatable(at, f"A {kind!r} block has no Chat Completions counterpart.")
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if calls:
        message["tool_calls"] = calls
    if thoughts and thinking_blocks:
        message["thinking_blocks"] = thoughts
    return message


def _effort(thinking: Any) -> str | None:
    """``thinking`` as a reasoning effort; None when thinking is off."""
    if not isinstance(thinking, dict) or thinking.get("type") == "disabled":
        return None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int) or isinstance(budget, bool):
        return "medium"  # adaptive thinking: the model's own judgement, a middle effort
    for bound, effort in _EFFORTS:
        if budget <= bound:
            return effort
    return "high"


def _output_config(config: Any, out: dict[str, Any]) -> str | None:
    """``output_config``: its ``format`` (a JSON schema) as ``response_format``; its
    ``effort`` returned, as a reasoning effort."""
    if not isinstance(config, dict):
        return None
    for name, value in config.items():
        if name not in ("effort", "format") and value is not None:
            raise Untranslatable(f"output_config.{name}", "It has no Chat Completions counterpart.")
    form = config.get("format")
    if isinstance(form, dict):
        if form.get("type") != "json_schema" or not isinstance(form.get("schema"), dict):
            raise Untranslatable("output_config.format", "Only a json_schema format translates.")
        schema = {"name": "output", "schema": form["schema"], "strict": True}
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    effort = config.get("effort")
    if effort is None:
        return None
    return effort if effort in ("low", "medium", "high") else "high"


def _tools(body: Mapping[str, Any], out: dict[str, Any], ignored: list[str]) -> None:
    """Custom tools as functions; a server tool (one with a ``type`` of Anthropic's, which
    Anthropic runs or defines) is left out and listed, unless ``tool_choice`` requires it."""
    functions: list[dict[str, Any]] = []
    server: set[str] = set()
    for tool in body.get("tools") or []:
        kind = tool.get("type")
        name = tool.get("name")
        if kind not in (None, "custom"):
            server.add(str(name))
            ignored.append(f"tools[{kind}]")
            continue
        function: dict[str, Any] = {"name": name, "parameters": tool.get("input_schema") or {}}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        functions.append({"type": "function", "function": function})
    if functions:
        out["tools"] = functions
    choice = body.get("tool_choice")
    if not isinstance(choice, dict):
        return
    kind = choice.get("type")
    if kind == "tool" and choice.get("name") in server:
        message = f"The server tool '{choice.get('name')}' cannot run on this provider."
        raise Untranslatable("tool_choice", message)
    if kind == "any" and not functions and server:
        raise Untranslatable("tool_choice", "Only server tools are offered; none can run here.")
    if not functions:
        return  # nothing to choose from: chat refuses a tool_choice without tools
    if kind == "auto":
        out["tool_choice"] = "auto"
    elif kind == "any":
        out["tool_choice"] = "required"
    elif kind == "none":
        out["tool_choice"] = "none"
    elif kind == "tool":
        out["tool_choice"] = {"type": "function", "function": {"name": choice.get("name")}}
    if choice.get("disable_parallel_tool_use") is True and kind != "none":
        out["parallel_tool_calls"] = False
