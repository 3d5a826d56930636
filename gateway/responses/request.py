"""A ``POST /v1/responses`` body as a Chat Completions body (pure).

Each top-level field of the Responses request is translated, refused (``Unsupported``,
naming the parameter) when it asks for something Chat Completions cannot do, or dropped
when dropping it cannot change the answer. Fields that are not the Responses API's are
passed on, as a chat call passes them on: the upstream judges them. The gateway keeps
no conversation state, so what needs stored state is refused (docs/responses.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.domain.errors import GatewayException

# Copied to the chat body under the same name when not null.
_SAME_NAME = (
    "temperature",
    "top_p",
    "parallel_tool_calls",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "service_tier",
)
# Read (translated, or checked and dropped) here: not passed on as they are.
_HANDLED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "text",
        "max_output_tokens",
        "stream",
        "stream_options",  # include_obfuscation only: nothing to obfuscate in a translation
        "reasoning",
        "metadata",  # the metadata of a stored response; nothing is stored
        "max_tool_calls",  # bounds built-in tool calls, which are refused anyway
        *_SAME_NAME,
    }
)
# Refused unless null: they name state stored at the provider.
_NEED_STATE = ("previous_response_id", "conversation")
# Refused unless null or their default value (and why).
_REFUSED_UNLESS_DEFAULT: dict[str, tuple[Any, str]] = {
    "background": (
        False,
        "background mode keeps a response to fetch later; the gateway keeps none",
    ),
    "store": (False, "the gateway stores no response (send store: false or leave it out)"),
    "prompt": (None, "stored prompt templates live at OpenAI"),
    "include": ([], "the extra output it asks for has no Chat Completions counterpart"),
    "truncation": ("disabled", "automatic truncation has no Chat Completions counterpart"),
    "top_logprobs": (0, "log probabilities are not translated"),
}
_ALL = frozenset({*_NEED_STATE, *_REFUSED_UNLESS_DEFAULT})
_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


class Unsupported(GatewayException):
    """A parameter that cannot be translated: answered 400 ``unsupported_parameter``."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


def to_chat(body: Mapping[str, Any], provider: str) -> dict[str, Any]:
    """The chat body for ``body``; ``provider`` (an id) is named in refusals."""
    _refuse_stateful(body, provider)
    chat: dict[str, Any] = {
        name: value for name, value in body.items() if name not in _HANDLED and name not in _ALL
    }
    chat["model"] = body.get("model")
    chat["messages"] = messages_of(body)
    if body.get("stream"):
        chat["stream"] = True
    for name in _SAME_NAME:
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    tools = _tools(body.get("tools"))
    if tools:
        chat["tools"] = tools
    choice = _tool_choice(body.get("tool_choice"))
    if choice is not None:
        chat["tool_choice"] = choice
    chat.update(_text(body.get("text")))
    effort = _reasoning_effort(body.get("reasoning"))
    if effort is not None:
        chat["reasoning_effort"] = effort
    return chat


def _refuse_stateful(body: Mapping[str, Any], provider: str) -> None:
    for name in _NEED_STATE:
        if body.get(name) is not None:
            raise Unsupported(
                name,
                f"'{name}' needs a stored conversation: the gateway keeps none, and provider "
                f"'{provider}' serves this model through Chat Completions. Send the whole "
                "conversation in 'input'.",
            )
    for name, (default, why) in _REFUSED_UNLESS_DEFAULT.items():
        value = body.get(name)
        if value is None or (value == default and type(value) is type(default)):
            continue
        raise Unsupported(name, f"'{name}' is not supported through provider '{provider}': {why}.")


def messages_of(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``instructions`` as a system message, then ``input`` as chat messages."""
    messages: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        messages.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        messages.append({"role": "user", "content": items})
        return messages
    if items is None:
        raise Unsupported("input", "'input' is required when nothing is stored.")
    if not isinstance(items, list):
        raise Unsupported("input", "'input' must be a string or an array of items.")
    turn: dict[str, Any] | None = None  # the assistant message that calls may still join
    for index, item in enumerate(items):
        where = f"input[{index}]"
        kind = item.get("type", "message")
        if kind == "function_call":
            if turn is None:
                turn = {"role": "assistant", "content": None}
                messages.append(turn)
            turn.setdefault("tool_calls", []).append(_function_call(item, where))
            continue
        if kind == "reasoning":
            continue  # a native provider's reasoning from an earlier turn: chat cannot take it
        if kind == "message":
            message = _message(item, where)
        elif kind == "function_call_output":
            message = _function_output(item, where)
        else:
            raise Unsupported(
                f"{where}.type",
                f"Input items of type '{kind}' cannot be translated to Chat Completions "
                "(message, function_call, function_call_output can).",
            )
        messages.append(message)
        # One assistant turn: its text and every call it made, until anything else follows.
        turn = message if message["role"] == "assistant" else None
    return messages


def _function_call(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    return {
        "id": _string(item, "call_id", where),
        "type": "function",
        "function": {
            "name": _string(item, "name", where),
            "arguments": _string(item, "arguments", where),
        },
    }


def _function_output(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    output = item.get("output")
    content = output if isinstance(output, str) else _joined_text(output, f"{where}.output")
    return {"role": "tool", "tool_call_id": _string(item, "call_id", where), "content": content}


def _message(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    role = item.get("role")
    if role not in _MESSAGE_ROLES:
        raise Unsupported(
            f"{where}.role", f"'{where}.role' must be one of {sorted(_MESSAGE_ROLES)}."
        )
    content = item.get("content")
    if role == "developer":
        role = "system"  # what every chat API knows
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise Unsupported(f"{where}.content", f"'{where}.content' must be a string or an array.")
    if role != "user":
        return {"role": role, "content": _joined_text(content, f"{where}.content")}
    return {
        "role": role,
        "content": [_user_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)],
    }


def _user_part(part: Any, where: str) -> dict[str, Any]:
    kind = part.get("type") if isinstance(part, dict) else None
    if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
        return {"type": "text", "text": part["text"]}
    if kind == "input_image" and isinstance(part.get("image_url"), str):
        image: dict[str, Any] = {"url": part["image_url"]}
        if part.get("detail") is not None:
            image["detail"] = part["detail"]
        return {"type": "image_url", "image_url": image}
    if kind == "input_image":
        raise Unsupported(
            where, "An image given by 'file_id' cannot be translated: use 'image_url'."
        )
    raise Unsupported(
        where, f"Content parts of type '{kind}' cannot be translated to Chat Completions."
    )


def _joined_text(parts: Any, where: str) -> str:
    """Text parts as one string (assistant, system and tool contents in chat)."""
    if not isinstance(parts, list):
        raise Unsupported(where, f"'{where}' must be a string or an array of text parts.")
    texts: list[str] = []
    for index, part in enumerate(parts):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        else:
            raise Unsupported(
                f"{where}[{index}]", f"Only text can be translated here, not '{kind}' parts."
            )
    return "".join(texts)


def _string(item: Mapping[str, Any], name: str, where: str) -> str:
    value = item.get(name)
    if not isinstance(value, str):
        raise Unsupported(f"{where}.{name}", f"'{where}.{name}' must be a string.")
    return value


def _tools(tools: Any) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for index, tool in enumerate(tools or []):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind != "function":
            raise Unsupported(
                f"tools[{index}]",
                f"Built-in tools such as '{kind}' run at OpenAI and cannot be translated to "
                "Chat Completions; only function tools can.",
            )
        function = {"name": tool.get("name")}
        for key in ("description", "parameters", "strict"):
            if tool.get(key) is not None:
                function[key] = tool[key]
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(choice: Any) -> Any:
    if choice is None or isinstance(choice, str):
        return choice
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "function" and isinstance(choice.get("name"), str):
        return {"type": "function", "function": {"name": choice["name"]}}
    raise Unsupported(
        "tool_choice",
        f"A tool_choice of type '{kind}' cannot be translated: use auto, none, required or a "
        "function.",
    )


def _text(text: Any) -> dict[str, Any]:
    """``text.format`` as ``response_format``, ``text.verbosity`` as ``verbosity``."""
    if text is None:
        return {}
    if not isinstance(text, dict):
        raise Unsupported("text", "'text' must be an object.")
    out: dict[str, Any] = {}
    if text.get("verbosity") is not None:
        out["verbosity"] = text["verbosity"]
    fmt = text.get("format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if fmt is None or kind == "text":
        return out
    if kind == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        schema = {
            key: fmt[key]
            for key in ("name", "schema", "strict", "description")
            if fmt.get(key) is not None
        }
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    else:
        raise Unsupported("text.format", f"A text.format of type '{kind}' cannot be translated.")
    return out


def _reasoning_effort(reasoning: Any) -> Any:
    """``reasoning.effort`` is chat's ``reasoning_effort``; a summary (a view of the
    reasoning, which chat does not return) is dropped."""
    if isinstance(reasoning, dict):
        return reasoning.get("effort")
    return None
