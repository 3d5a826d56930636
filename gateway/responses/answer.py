"""A chat completion as a Responses API ``Response`` object (pure).

The response echoes what the request asked (instructions, tools, tool_choice, text
format, sampling), as OpenAI's does; ``store`` is false: nothing is kept, so its id
cannot be named in a later ``previous_response_id``.

A call of a namespaced function (offered to chat as ``<namespace>__<name>``) comes back
as a ``function_call`` with its ``name`` and ``namespace``. The provider's reasoning
blocks (a chat message's ``thinking_blocks``, from Anthropic's extended thinking) come
back as ``reasoning`` items, before the message: with ``summary`` text when the request
set ``reasoning.summary``, and with ``encrypted_content`` (gateway/responses/reasoning.py)
when its ``include`` holds ``reasoning.encrypted_content`` and the block is whole (signed).
A chat server's bare ``reasoning_content`` text is one such item, without a block.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from gateway.domain.usage import Usage
from gateway.responses import reasoning as reasoning_codec
from gateway.responses.request import (
    encrypted_reasoning_asked,
    namespaced_names,
    summary_asked,
)

# A chat finish_reason that ends a response early, and why.
_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def new_id(prefix: str) -> str:
    """An id in OpenAI's shape: ``resp_…``, ``msg_…``, ``fc_…``."""
    return f"{prefix}_{uuid.uuid4().hex}"


def skeleton(
    request: Mapping[str, Any], response_id: str, created_at: int, model: str
) -> dict[str, Any]:
    """The response as it starts: no output yet, ``in_progress``."""
    text = request.get("text")
    text_out: dict[str, Any] = {"format": {"type": "text"}}
    if isinstance(text, dict):
        if isinstance(text.get("format"), dict):
            text_out["format"] = text["format"]
        if text.get("verbosity") is not None:
            text_out["verbosity"] = text["verbosity"]
    metadata = request.get("metadata")
    parallel = request.get("parallel_tool_calls")
    response: dict[str, Any] = {
        "id": response_id,
        "object": "response",
        "created_at": created_at,
        "status": "in_progress",
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "max_tool_calls": request.get("max_tool_calls"),
        "model": model,
        "output": [],
        "parallel_tool_calls": parallel if isinstance(parallel, bool) else True,
        "previous_response_id": None,
        "reasoning": _reasoning_echo(request.get("reasoning")),
        "store": False,
        "temperature": request.get("temperature"),
        "text": text_out,
        "tool_choice": request.get("tool_choice") or "auto",
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p"),
        "truncation": "disabled",
        "metadata": metadata if isinstance(metadata, dict) else {},
    }
    for name in ("user", "safety_identifier", "prompt_cache_key"):
        if isinstance(request.get(name), str):
            response[name] = request[name]
    return response


def _reasoning_echo(reasoning: Any) -> dict[str, Any] | None:
    if not isinstance(reasoning, dict):
        return None
    return {"effort": reasoning.get("effort"), "summary": reasoning.get("summary")}


def finish(
    response: dict[str, Any], finish_reason: str | None, usage: dict[str, Any] | None
) -> dict[str, Any]:
    """``response`` completed (or incomplete, by the chat finish reason), with its usage."""
    reason = _INCOMPLETE.get(finish_reason or "")
    response["status"] = "incomplete" if reason else "completed"
    response["incomplete_details"] = {"reason": reason} if reason else None
    if usage is not None:
        response["usage"] = usage
    return response


def usage_json(usage: Usage, reasoning_tokens: int = 0) -> dict[str, Any]:
    """The Responses API's ``usage`` for reported usage."""
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": reasoning_tokens},
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def reasoning_tokens_of(usage: Any) -> int:
    """``completion_tokens_details.reasoning_tokens`` of a chat usage, 0 when absent."""
    details = usage.get("completion_tokens_details") if isinstance(usage, dict) else None
    value = details.get("reasoning_tokens") if isinstance(details, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def message_item(item_id: str, text: str, refusal: str | None, status: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text or refusal is None:
        content.append(output_text_part(text))
    if refusal is not None:
        content.append({"type": "refusal", "refusal": refusal})
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": content,
    }


def output_text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def function_call_item(
    item_id: str,
    call_id: str,
    name: str,
    arguments: str,
    status: str,
    names: Mapping[str, tuple[str, str]] | None = None,
) -> dict[str, Any]:
    """``names``: the request's namespaced functions by chat name (``namespaced_names``)."""
    item: dict[str, Any] = {
        "type": "function_call",
        "id": item_id,
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": status,
    }
    if names and name in names:
        item["namespace"], item["name"] = names[name]
    return item


def reasoning_item(
    item_id: str, block: Mapping[str, Any], request: Mapping[str, Any], status: str
) -> dict[str, Any]:
    """A provider's reasoning block as a ``reasoning`` item (see the module)."""
    item: dict[str, Any] = {"type": "reasoning", "id": item_id, "summary": [], "status": status}
    text = block.get("thinking")
    if summary_asked(request) and isinstance(text, str) and text:
        item["summary"] = [{"type": "summary_text", "text": text}]
    if encrypted_reasoning_asked(request) and reasoning_codec.whole(block):
        item["encrypted_content"] = reasoning_codec.encode(dict(block))
    return item


def to_response(
    chat: Mapping[str, Any],
    request: Mapping[str, Any],
    usage: Usage | None,
    created_at: int,
) -> dict[str, Any]:
    """The whole chat answer ``chat`` as the ``Response`` to ``request``."""
    model = chat.get("model")
    response = skeleton(
        request, new_id("resp"), created_at, model if isinstance(model, str) else ""
    )
    choices = chat.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, dict) else None
    message = message if isinstance(message, dict) else {}
    finish_reason = choice.get("finish_reason") if isinstance(choice, dict) else None
    output: list[dict[str, Any]] = []
    blocks = message.get("thinking_blocks")
    thought = message.get("reasoning_content")
    if not isinstance(blocks, list) and isinstance(thought, str) and thought:
        blocks = [{"type": "thinking", "thinking": thought}]  # a chat server's reasoning text
    for block in blocks if isinstance(blocks, list) else []:
        if isinstance(block, dict):
            output.append(reasoning_item(new_id("rs"), block, request, "completed"))
    content = message.get("content")
    refusal = message.get("refusal")
    calls = message.get("tool_calls")
    calls = calls if isinstance(calls, list) else []
    if (isinstance(content, str) and content) or isinstance(refusal, str) or not calls:
        text = content if isinstance(content, str) else ""
        output.append(
            message_item(
                new_id("msg"),
                text,
                refusal if isinstance(refusal, str) else None,
                "incomplete" if finish_reason == "length" else "completed",
            )
        )
    names = namespaced_names(request.get("tools"))
    for call in calls:
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            continue
        output.append(
            function_call_item(
                new_id("fc"),
                str(call.get("id") or new_id("call")),
                str(function.get("name") or ""),
                str(function.get("arguments") or ""),
                "completed",
                names,
            )
        )
    response["output"] = output
    reported = None
    if usage is not None:
        reported = usage_json(usage, reasoning_tokens_of(chat.get("usage")))
    return finish(response, finish_reason if isinstance(finish_reason, str) else None, reported)
