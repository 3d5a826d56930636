"""A Chat Completions answer as an Anthropic message (pure): text and tool calls as
content blocks, ``finish_reason`` as ``stop_reason``, usage in Anthropic's terms (its
``input_tokens`` exclude the cache's reads and writes)."""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.usage import Usage

STOP_REASONS = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}


def stop_reason(finish_reason: Any) -> str:
    return STOP_REASONS.get(str(finish_reason), "end_turn")


def message_id(chat_id: Any) -> str:
    return f"msg_{chat_id}" if isinstance(chat_id, str) and chat_id else "msg_gateway"


def anthropic_usage(usage: Usage | None) -> dict[str, int]:
    if usage is None:  # the upstream reported none: zeros (the row holds the estimate)
        return {
            "input_tokens": 0,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
    cached = usage.cache_read_tokens + usage.cache_write_tokens
    return {
        "input_tokens": max(usage.input_tokens - cached, 0),
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }


def tool_input(arguments: Any) -> Any:
    """A tool call's arguments as ``input``: the JSON object they spell; text that is no
    JSON object (a model's mistake) is kept whole under ``arguments`` rather than lost."""
    if not isinstance(arguments, str) or not arguments.strip():
        return {}
    try:
        decoded = json.loads(arguments)
    except json.JSONDecodeError:
        return {"arguments": arguments}
    return decoded if isinstance(decoded, dict) else {"arguments": arguments}


def thinking_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The answer's reasoning as thinking blocks: Claude's own (``thinking_blocks``, with
    their signatures, as a Bedrock answer carries them), else ``reasoning_content`` as one
    block with an empty signature (a reasoning model's text, which nothing verifies)."""
    blocks = message.get("thinking_blocks")
    if isinstance(blocks, list) and blocks:
        return [dict(b) for b in blocks if isinstance(b, dict)]
    text = message.get("reasoning_content")
    if isinstance(text, str) and text:
        return [{"type": "thinking", "thinking": text, "signature": ""}]
    return []


def to_message(chat: dict[str, Any], usage: Usage | None) -> dict[str, Any]:
    choices = chat.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, dict) else None
    message = message if isinstance(message, dict) else {}
    content = thinking_of(message)
    text = message.get("content")
    if isinstance(text, str) and text:
        content.append({"type": "text", "text": text})
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        content.append({"type": "text", "text": refusal})
    for call in message.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id") or f"toolu_{len(content)}",
                "name": function.get("name"),
                "input": tool_input(function.get("arguments")),
            }
        )
    reason = stop_reason(choice.get("finish_reason") if isinstance(choice, dict) else None)
    if any(block["type"] == "tool_use" for block in content):
        reason = "tool_use"
    return {
        "id": message_id(chat.get("id")),
        "type": "message",
        "role": "assistant",
        "model": chat.get("model"),
        "content": content,
        "stop_reason": reason,
        "stop_sequence": None,
        "usage": anthropic_usage(usage),
    }
