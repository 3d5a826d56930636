"""Pure translation between OpenAI Chat Completions and Bedrock's Converse API.

Dicts in, dicts out: no HTTP here (the stream half is in ``stream.py``). The messages
are read by the Anthropic translation (the same roles, merging and checks) and their
blocks rewritten in Converse's shape: ``text``, ``image {format, source.bytes}``,
``toolUse {toolUseId, name, input}``, ``toolResult {toolUseId, content}``. Tools,
``tool_choice`` and ``response_format`` are planned as for Claude (``tools.py``).
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from gateway.domain.errors import TranslationError
from gateway.domain.usage import Usage
from gateway.upstream.anthropic.thinking import THINKING_TYPES, plan_thinking, without_thinking
from gateway.upstream.anthropic.translate import translate_messages
from gateway.upstream.bedrock.options import inference_config, refuse_unsupported
from gateway.upstream.bedrock.tools import plan_tool_config

# maxTokens of a thinking call that names none (Claude's thinking budget is part of it).
DEFAULT_THINKING_MAX_TOKENS = 4096

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "guardrail_intervened": "content_filter",
    "content_filtered": "content_filter",
}


@dataclass(frozen=True, slots=True)
class ConverseRequest:
    payload: dict[str, Any]  # the Converse body (the model is in the URL)
    response_tool: str | None  # the tool whose input is the answer (response_format)
    ignored: tuple[str, ...] = ()  # accepted, not sent: the x-gateway-ignored-params names


def is_claude(model_name: str) -> bool:
    """Anthropic's models on Bedrock: ``anthropic.claude-…``, with or without a
    cross-region prefix (``us.``, ``global.``) or in an inference-profile ARN."""
    return "anthropic.claude" in model_name


def translate_request(
    body: dict[str, Any], model_name: str, default_max_tokens: int | None
) -> ConverseRequest:
    """An OpenAI chat request as a Converse body."""
    n = body.get("n")
    if n is not None and n != 1:
        raise TranslationError("only n=1 is supported for this model", "n")
    refuse_unsupported(body)
    ignored: list[str] = []
    if body.get("verbosity") is not None:
        ignored.append("verbosity")  # the answer's length of style: Converse has no such knob
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise TranslationError("messages must be a non-empty array", "messages")
    _refuse_image_links(raw)
    system, messages = translate_messages(raw)
    if not messages:
        raise TranslationError("messages must hold at least one non-system message", "messages")
    config = inference_config(body, default_max_tokens)
    blocks = [block for message in messages for block in message["content"]]
    has_tool_blocks = any(b["type"] in ("tool_use", "tool_result") for b in blocks)
    tool_config, response_tool = plan_tool_config(body, has_tool_blocks)
    thinking = _thinking(body, model_name, config, messages, tool_config, ignored)
    if thinking is None and any(b["type"] in THINKING_TYPES for b in blocks):
        messages = without_thinking(messages)
    out: dict[str, Any] = {"messages": [_message(m) for m in messages]}
    if system:
        out["system"] = [{"text": text} for text in system]
    if config:
        out["inferenceConfig"] = config
    if tool_config is not None:
        out["toolConfig"] = tool_config
    if thinking is not None:
        out["additionalModelRequestFields"] = {"thinking": thinking}
    return ConverseRequest(out, response_tool, tuple(ignored))


def _refuse_image_links(raw: list[Any]) -> None:
    """Converse takes an image's bytes only: an http(s) link is a 400 naming the part."""
    for i, msg in enumerate(raw):
        content = msg.get("content") if isinstance(msg, dict) else None
        for j, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict) or part.get("type") != "image_url":
                continue
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            if isinstance(url, str) and url.startswith(("http://", "https://")):
                raise TranslationError(
                    "AWS Bedrock cannot fetch an image by URL: send it as a base64 data URL "
                    "(data:image/png;base64,...)",
                    f"messages[{i}].content[{j}].image_url",
                )


def _thinking(
    body: dict[str, Any],
    model_name: str,
    config: dict[str, Any],
    messages: list[dict[str, Any]],
    tool_config: dict[str, Any] | None,
    ignored: list[str],
) -> dict[str, Any] | None:
    """Claude's extended thinking for ``reasoning_effort``, planned as for Anthropic's own
    API (``gateway.upstream.anthropic.thinking``): left out and listed as ignored where
    Claude would refuse it (a forced tool, a max_tokens too small, a tool loop whose
    thinking was not kept). Other Bedrock models: a 400 naming the field."""
    effort = body.get("reasoning_effort")
    if effort is None or effort == "none":
        return None
    if not is_claude(model_name):
        raise TranslationError(
            "'reasoning_effort' is translated for Claude models on AWS Bedrock only; "
            "leave it out for this model",
            "reasoning_effort",
        )
    max_tokens = config.get("maxTokens") or DEFAULT_THINKING_MAX_TOKENS
    choice = tool_config.get("toolChoice") if tool_config is not None else None
    forced = (
        {"type": "any"} if choice is not None and ("any" in choice or "tool" in choice) else None
    )
    plan = plan_thinking(body, max_tokens, messages, forced)
    ignored.extend(plan.ignored)
    if plan.thinking is None:
        return None
    config["maxTokens"] = max_tokens
    temperature = config.get("temperature")
    if temperature is not None and temperature != 1:  # Claude refuses them beside thinking
        del config["temperature"]
        ignored.append("temperature")
    top_p = config.get("topP")
    if top_p is not None and top_p < 0.95:
        del config["topP"]
        ignored.append("top_p")
    return plan.thinking


def _message(message: dict[str, Any]) -> dict[str, Any]:
    return {"role": message["role"], "content": [_block(b) for b in message["content"]]}


def _block(block: dict[str, Any]) -> dict[str, Any]:
    """An Anthropic block (from ``translate_messages``) in Converse's shape."""
    kind = block["type"]
    if kind == "text":
        return {"text": block["text"]}
    if kind == "image":  # base64 only: links were refused before
        source = block["source"]
        image_format = source["media_type"].removeprefix("image/")
        return {"image": {"format": image_format, "source": {"bytes": source["data"]}}}
    if kind == "thinking":  # sent back as Claude wrote it, signature and all
        text = {"text": block["thinking"], "signature": block["signature"]}
        return {"reasoningContent": {"reasoningText": text}}
    if kind == "redacted_thinking":
        return {"reasoningContent": {"redactedContent": block["data"]}}
    if kind == "tool_use":
        return {
            "toolUse": {"toolUseId": block["id"], "name": block["name"], "input": block["input"]}
        }
    content = block.get("content")
    if isinstance(content, str):
        parts = [{"text": content}]
    elif isinstance(content, list):
        parts = [{"text": part["text"]} for part in content]
    else:
        parts = [{"text": ""}]
    return {"toolResult": {"toolUseId": block["tool_use_id"], "content": parts}}


# --- response and usage --------------------------------------------------------------------


def finish_reason(stop_reason: Any) -> str:
    """OpenAI's finish_reason for a Converse stopReason (guardrails: content_filter)."""
    return _FINISH_REASONS.get(str(stop_reason), "stop")


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def usage_from_bedrock(usage: Any) -> Usage | None:
    """Converse's ``inputTokens`` leaves out cache reads and writes; Usage counts them in."""
    if not isinstance(usage, dict) or not isinstance(usage.get("inputTokens"), int):
        return None
    read = _count(usage.get("cacheReadInputTokens"))
    write = _count(usage.get("cacheWriteInputTokens"))
    return Usage(
        input_tokens=_count(usage.get("inputTokens")) + read + write,
        output_tokens=_count(usage.get("outputTokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def openai_usage(usage: Usage) -> dict[str, Any]:
    """OpenAI's usage, with cache writes named as OpenRouter does so cacheWrite prices them."""
    details: dict[str, Any] = {"cached_tokens": usage.cache_read_tokens}
    if usage.cache_write_tokens:
        details["cache_write_tokens"] = usage.cache_write_tokens
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": details,
    }


def completion_id(request_id: str | None) -> str:
    """Converse answers carry no id: the AWS request id stands in (else a fresh one)."""
    return f"chatcmpl-{request_id or uuid.uuid4().hex}"


def thought_block(reasoning: Any) -> dict[str, Any] | None:
    """A ``reasoningContent`` block as an Anthropic-style thinking block (what a later turn
    sends back in ``thinking_blocks``)."""
    if not isinstance(reasoning, dict):
        return None
    text = reasoning.get("reasoningText")
    if isinstance(text, dict) and isinstance(text.get("text"), str):
        signature = text.get("signature")
        return {
            "type": "thinking",
            "thinking": text["text"],
            "signature": signature if isinstance(signature, str) else "",
        }
    if isinstance(reasoning.get("redactedContent"), str):
        return {"type": "redacted_thinking", "data": reasoning["redactedContent"]}
    return None


def from_converse_response(
    resp: dict[str, Any],
    model_name: str,
    created: int,
    request_id: str | None = None,
    response_tool: str | None = None,
) -> dict[str, Any]:
    """A Converse answer as an OpenAI chat.completion (the response tool's input alone
    is the content when it was called)."""
    output = resp.get("output")
    message_in = output.get("message") if isinstance(output, dict) else None
    content = message_in.get("content") if isinstance(message_in, dict) else None
    texts: list[str] = []
    answers: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    thoughts: list[dict[str, Any]] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        thought = thought_block(block.get("reasoningContent"))
        if thought is not None:
            thoughts.append(thought)
        use = block.get("toolUse")
        if not isinstance(use, dict):
            continue
        arguments = json.dumps(use.get("input") or {}, ensure_ascii=False)
        if response_tool is not None and use.get("name") == response_tool:
            answers.append(arguments)
        else:
            function = {"name": use.get("name"), "arguments": arguments}
            tool_calls.append(
                {"id": use.get("toolUseId"), "type": "function", "function": function}
            )
    said = answers or texts
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(said) if said or not tool_calls else None,
        "refusal": None,
    }
    if tool_calls:
        message["tool_calls"] = tool_calls
    if thoughts:  # as the Anthropic adapter names them: the text, and the blocks to send back
        message["reasoning_content"] = "".join(str(t.get("thinking") or "") for t in thoughts)
        message["thinking_blocks"] = thoughts
    reason = finish_reason(resp.get("stopReason"))
    if reason == "tool_calls" and answers and not tool_calls:
        reason = "stop"  # only the response tool was called: that is the answer
    usage = usage_from_bedrock(resp.get("usage")) or Usage(input_tokens=0, output_tokens=0)
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": reason}
    return {
        "id": completion_id(request_id),
        "object": "chat.completion",
        "created": created,
        "model": model_name,
        "choices": [choice],
        "usage": openai_usage(usage),
    }
