"""``instructions`` and ``input`` of a ``POST /v1/responses`` body as chat messages (pure).

Message, ``function_call`` and ``function_call_output`` items become chat messages; with
``thinking``, a ``reasoning`` item carrying one of the gateway's ``encrypted_content``
values becomes ``thinking_blocks`` on the assistant message it preceded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.responses import reasoning as reasoning_codec
from gateway.responses.tools import NAMESPACE_SEPARATOR
from gateway.responses.translation import Unsupported

_MESSAGE_ROLES = frozenset({"user", "assistant", "system", "developer"})
_TEXT_PARTS = frozenset({"input_text", "output_text", "text"})


def messages_of(body: Mapping[str, Any], *, thinking: bool = False) -> list[dict[str, Any]]:
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
    messages.extend(_items_as_messages(items, thinking))
    return messages


def _items_as_messages(items: list[Any], thinking: bool) -> list[dict[str, Any]]:
    """The ``input`` items as chat messages: consecutive calls join one assistant turn,
    reasoning blocks go on the assistant message they precede."""
    messages: list[dict[str, Any]] = []
    turn: dict[str, Any] | None = None  # the assistant message that calls may still join
    pending: list[dict[str, Any]] = []  # thinking blocks for the next assistant message
    for index, item in enumerate(items):
        where = f"input[{index}]"
        if not isinstance(item, dict):
            raise Unsupported(where, f"'{where}' must be an object.")
        kind = item.get("type", "message")
        if kind == "function_call":
            if turn is None:
                turn = {"role": "assistant", "content": None}
                messages.append(turn)
            if pending:
                turn.setdefault("thinking_blocks", []).extend(pending)
                pending = []
            turn.setdefault("tool_calls", []).append(_function_call(item, where))
            continue
        if kind == "reasoning":
            # One of the gateway's own (a provider's reasoning block) goes back to a
            # provider that takes it; any other (a native provider's) cannot be sent.
            block = reasoning_codec.decode(item.get("encrypted_content")) if thinking else None
            if block is not None:
                pending.append(block)
            continue
        if kind == "message":
            message = _message(item, where)
            if message["role"] == "assistant" and pending:
                message["thinking_blocks"] = pending
            pending = []
        elif kind == "function_call_output":
            message = _function_output(item, where)
        else:
            raise Unsupported(
                f"{where}.type",
                f"Input items of type '{kind}' cannot be translated to Chat Completions "
                "(message, function_call, function_call_output can).",
            )
        if kind != "message":
            pending = []
        messages.append(message)
        # One assistant turn: its text and every call it made, until anything else follows.
        turn = message if message["role"] == "assistant" else None
    return messages


def _function_call(item: Mapping[str, Any], where: str) -> dict[str, Any]:
    name = _string(item, "name", where)
    namespace = item.get("namespace")
    if isinstance(namespace, str) and namespace:
        name = f"{namespace}{NAMESPACE_SEPARATOR}{name}"
    return {
        "id": _string(item, "call_id", where),
        "type": "function",
        "function": {"name": name, "arguments": _string(item, "arguments", where)},
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
