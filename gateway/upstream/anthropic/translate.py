"""Pure translation between OpenAI Chat Completions and Anthropic's Messages API.

Dicts in, dicts out: no HTTP here. The streaming half lives in
`gateway.upstream.anthropic.stream`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from gateway.domain.errors import TranslationError
from gateway.domain.usage import Usage
from gateway.upstream.anthropic.options import copy_options, refuse_unsupported
from gateway.upstream.anthropic.thinking import (
    THINKING_TYPES,
    plan_thinking,
    sampling_beside_thinking,
    thinking_blocks,
    without_thinking,
)
from gateway.upstream.anthropic.tools import plan_tools
from gateway.upstream.chat_fields import max_tokens, part_text, text_parts, tool_call_of

_SUPPORTED_IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
_DATA_URL = re.compile(r"^data:(?P<media>[^;,]+);base64,(?P<data>.*)$", re.DOTALL)

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


# --- request -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MessagesRequest:
    payload: dict[str, Any]  # the /v1/messages body
    response_tool: str | None  # the tool whose input is the answer (response_format)
    # Request fields accepted but not sent (style only, or thinking Anthropic would refuse
    # beside the rest): the x-gateway-ignored-params header's names.
    ignored: tuple[str, ...] = ()


def translate_request(
    body: dict[str, Any], model_name: str, default_max_tokens: int
) -> MessagesRequest:
    """An OpenAI chat request as an Anthropic /v1/messages body."""
    n = body.get("n")
    if n is not None and n != 1:
        raise TranslationError("only n=1 is supported for this model", "n")
    refuse_unsupported(body)
    ignored: list[str] = []
    if body.get("verbosity") is not None:
        ignored.append("verbosity")  # the answer's length of style: Claude has no such knob
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise TranslationError("messages must be a non-empty array", "messages")
    system, messages = translate_messages(raw)
    if not messages:
        raise TranslationError("messages must hold at least one non-system message", "messages")
    length = max_tokens(body) or default_max_tokens
    out: dict[str, Any] = {"model": model_name, "max_tokens": length, "messages": messages}
    if system:
        out["system"] = system[0] if len(system) == 1 else [_text(s) for s in system]
    copy_options(body, out)
    plan = plan_tools(body)
    if plan.tools:
        out["tools"] = plan.tools
    if plan.tool_choice is not None:
        out["tool_choice"] = plan.tool_choice
    thinking = plan_thinking(body, length, messages, plan.tool_choice)
    ignored.extend(thinking.ignored)
    if thinking.thinking is not None:
        out["thinking"] = thinking.thinking
        sampling_beside_thinking(out, ignored)
    elif any(b.get("type") in THINKING_TYPES for m in messages for b in m["content"]):
        out["messages"] = without_thinking(messages)
    return MessagesRequest(out, plan.response_tool, tuple(ignored))


def to_messages_request(
    body: dict[str, Any], model_name: str, default_max_tokens: int
) -> dict[str, Any]:
    """The /v1/messages body alone (see ``translate_request``)."""
    return translate_request(body, model_name, default_max_tokens).payload


def translate_messages(raw: list[Any]) -> tuple[list[str], list[dict[str, Any]]]:
    """(system texts, Anthropic messages) of OpenAI chat messages; same-role neighbours
    merged (also used by the Bedrock translation, which converts the blocks)."""
    system: list[str] = []
    messages: list[dict[str, Any]] = []
    for i, msg in enumerate(raw):
        param = f"messages[{i}]"
        if not isinstance(msg, dict):
            raise TranslationError("each message must be an object", param)
        role = msg.get("role")
        if role in ("system", "developer"):
            system.extend(text_parts(msg.get("content"), f"{param}.content"))
            continue
        if role == "user":
            _append(messages, "user", _user_blocks(msg.get("content"), f"{param}.content"))
        elif role == "assistant":
            _append(messages, "assistant", _assistant_blocks(msg, param))
        elif role == "tool":
            _append(messages, "user", [_tool_result(msg, param)])
        else:
            raise TranslationError(f"unsupported message role: {role!r}", f"{param}.role")
    return system, messages


def _append(messages: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    # Anthropic requires user/assistant alternation, so same-role neighbours merge.
    if not blocks:
        return
    if messages and messages[-1]["role"] == role:
        messages[-1]["content"].extend(blocks)
    else:
        messages.append({"role": role, "content": blocks})


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user_blocks(content: Any, param: str) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return [_text(t) for t in text_parts(content, param)]
    blocks: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "image_url":
            blocks.append(_image_block(part.get("image_url"), f"{param}[{j}].image_url"))
        elif kind == "text":
            text = part_text(part, f"{param}[{j}]")
            if text:  # Anthropic rejects empty text blocks
                blocks.append(_text(text))
        else:
            raise TranslationError(f"unsupported content part type: {kind!r}", f"{param}[{j}]")
    return blocks


def _image_block(image: Any, param: str) -> dict[str, Any]:
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        raise TranslationError("image_url needs a url", param)
    if url.startswith(("http://", "https://")):
        return {"type": "image", "source": {"type": "url", "url": url}}
    match = _DATA_URL.match(url)
    if match is None:
        raise TranslationError("image url must be http(s) or a base64 data URL", param)
    media_type = match.group("media").lower()
    if media_type not in _SUPPORTED_IMAGE_TYPES:
        raise TranslationError(f"unsupported image media type: {media_type}", param)
    source = {"type": "base64", "media_type": media_type, "data": match.group("data")}
    return {"type": "image", "source": source}


def _assistant_blocks(msg: dict[str, Any], param: str) -> list[dict[str, Any]]:
    for key in ("function_call", "audio"):  # no Anthropic counterpart: never dropped unseen
        if msg.get(key) is not None:
            raise TranslationError(f"an assistant message's {key} is not supported here", param)
    blocks = thinking_blocks(msg, param)  # first, as Anthropic wrote them
    blocks += [_text(t) for t in text_parts(msg.get("content"), f"{param}.content")]
    refusal = msg.get("refusal")
    if isinstance(refusal, str) and refusal:  # what the assistant said, as text
        blocks.append(_text(refusal))
    calls = msg.get("tool_calls")
    if calls is None:
        return blocks
    if not isinstance(calls, list):
        raise TranslationError("tool_calls must be an array", f"{param}.tool_calls")
    for j, call in enumerate(calls):
        blocks.append(_tool_use(call, f"{param}.tool_calls[{j}]"))
    return blocks


def _tool_use(call: Any, param: str) -> dict[str, Any]:
    call_id, name, arguments = tool_call_of(call, param)
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def _tool_result(msg: dict[str, Any], param: str) -> dict[str, Any]:
    call_id = msg.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise TranslationError("a tool message needs tool_call_id", f"{param}.tool_call_id")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id}
    content = msg.get("content")
    texts = text_parts(content, f"{param}.content")
    if isinstance(content, str) and content:
        block["content"] = content
    elif texts:
        block["content"] = [_text(t) for t in texts]
    return block


# --- response and usage --------------------------------------------------------------------


def finish_reason(stop_reason: Any) -> str | None:
    """OpenAI's finish_reason for an Anthropic stop_reason (None while still running)."""
    if stop_reason is None:
        return None
    return _FINISH_REASONS.get(str(stop_reason), "stop")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def usage_from_anthropic(usage: dict[str, Any]) -> Usage:
    """Anthropic's input_tokens excludes cache reads and writes; Usage counts them in."""
    read = _count(usage.get("cache_read_input_tokens"))
    write = _count(usage.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=_count(usage.get("input_tokens")) + read + write,
        output_tokens=_count(usage.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def openai_usage(usage: Usage) -> dict[str, Any]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
    }


def from_messages_response(
    resp: dict[str, Any], created: int, response_tool: str | None = None
) -> dict[str, Any]:
    """An Anthropic message as an OpenAI chat.completion object.

    ``response_tool``: the tool standing in for response_format; its input alone is the
    answer's content (text blocks around it are dropped: the content must parse), and
    calling it alone is a plain stop.
    """
    texts: list[str] = []
    answers: list[str] = []  # the response tool's input, as JSON
    tool_calls: list[dict[str, Any]] = []
    thoughts: list[dict[str, Any]] = []  # extended thinking's blocks, to send back later
    content = resp.get("content")
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") in THINKING_TYPES:
            thoughts.append(block)
        elif block.get("type") == "text":
            texts.append(str(block.get("text", "")))
        elif block.get("type") != "tool_use":
            continue
        elif response_tool is not None and block.get("name") == response_tool:
            answers.append(json.dumps(block.get("input") or {}, ensure_ascii=False))
        else:
            arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
            function = {"name": block.get("name"), "arguments": arguments}
            tool_calls.append({"id": block.get("id"), "type": "function", "function": function})
    answered = bool(answers)  # the response tool was called
    said = answers if answered else texts
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(said) if said or not tool_calls else None,
        "refusal": None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    if thoughts:  # as LiteLLM names them: the text, and the blocks to send back as they are
        message["reasoning_content"] = "".join(str(b.get("thinking") or "") for b in thoughts)
        message["thinking_blocks"] = thoughts
    raw_usage = resp.get("usage")
    usage = usage_from_anthropic(raw_usage if isinstance(raw_usage, dict) else {})
    reason = finish_reason(resp.get("stop_reason")) or "stop"
    if reason == "tool_calls" and answered and not tool_calls:
        reason = "stop"  # only the response tool was called: that is the answer
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reason}
    return {
        "id": resp.get("id"),
        "object": "chat.completion",
        "created": created,
        "model": resp.get("model"),
        "choices": [choice],
        "usage": openai_usage(usage),
    }
