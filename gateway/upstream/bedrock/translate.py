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
from gateway.upstream.anthropic.translate import translate_messages
from gateway.upstream.bedrock.options import inference_config, refuse_unsupported
from gateway.upstream.bedrock.tools import plan_tool_config

# OpenAI's reasoning_effort as Claude's thinking budget (tokens); Claude's least is 1024.
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
MIN_THINKING_BUDGET = 1024

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
    raw = body.get("messages")
    if not isinstance(raw, list) or not raw:
        raise TranslationError("messages must be a non-empty array", "messages")
    _refuse_image_links(raw)
    system, messages = translate_messages(raw)
    if not messages:
        raise TranslationError("messages must hold at least one non-system message", "messages")
    out: dict[str, Any] = {"messages": [_message(m) for m in messages]}
    if system:
        out["system"] = [{"text": text} for text in system]
    config = inference_config(body, default_max_tokens)
    thinking = _thinking(body, model_name, config)
    if config:
        out["inferenceConfig"] = config
    has_tool_blocks = any(
        "toolUse" in b or "toolResult" in b for m in out["messages"] for b in m["content"]
    )
    tool_config, response_tool = plan_tool_config(body, has_tool_blocks)
    if tool_config is not None:
        out["toolConfig"] = tool_config
    if thinking is not None:
        out["additionalModelRequestFields"] = {"thinking": thinking}
    return ConverseRequest(out, response_tool)


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
    body: dict[str, Any], model_name: str, config: dict[str, Any]
) -> dict[str, Any] | None:
    """Claude's extended thinking for ``reasoning_effort``; maxTokens made to exceed the
    budget, as Claude requires."""
    effort = body.get("reasoning_effort")
    if effort is None or effort == "none":
        return None
    if effort not in THINKING_BUDGETS:
        choices = ", ".join(["none", *THINKING_BUDGETS])
        raise TranslationError(f"reasoning_effort must be one of {choices}", "reasoning_effort")
    if not is_claude(model_name):
        raise TranslationError(
            "'reasoning_effort' is translated for Claude models on AWS Bedrock only; "
            "leave it out for this model",
            "reasoning_effort",
        )
    response_format = body.get("response_format")
    kind = response_format.get("type") if isinstance(response_format, dict) else None
    if kind in ("json_object", "json_schema"):
        raise TranslationError(
            "'response_format' (structured output) cannot be combined with 'reasoning_effort' "
            "on this model (served by AWS Bedrock): extended thinking cannot force the answer "
            "tool that makes the answer JSON; leave out one of them",
            "reasoning_effort",
        )
    choice = body.get("tool_choice")
    if choice == "required" or isinstance(choice, dict):
        raise TranslationError(
            "a forced 'tool_choice' cannot be combined with 'reasoning_effort' on Claude "
            "(served by AWS Bedrock); use tool_choice 'auto'",
            "tool_choice",
        )
    budget = THINKING_BUDGETS[effort]
    max_tokens = config.get("maxTokens")
    if max_tokens is None:
        config["maxTokens"] = budget + 4096
    elif max_tokens <= MIN_THINKING_BUDGET:
        raise TranslationError(
            f"reasoning_effort needs max_tokens above {MIN_THINKING_BUDGET} on Claude "
            "(the thinking budget is part of it)",
            "reasoning_effort",
        )
    else:
        budget = min(budget, max_tokens - 1)
    return {"type": "enabled", "budget_tokens": budget}


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
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), str):
            texts.append(block["text"])
        use = block.get("toolUse")
        if not isinstance(use, dict):
            continue  # reasoningContent and the like have no OpenAI counterpart
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
