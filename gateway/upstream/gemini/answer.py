"""A Gemini ``GenerateContentResponse`` as OpenAI's chat answer (pure): the whole answer
(``from_gemini_response``), and the pieces a stream's chunks are read with too
(``stream``): candidates and their parts (text, thought summaries, function calls with
their ids), the finish reason, why Gemini blocked or stopped, and the usage."""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.usage import Usage
from gateway.upstream.gemini.tools import new_call_id

# finishReason -> OpenAI's finish_reason; a reason not listed is a plain stop.
_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "LANGUAGE": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
    "IMAGE_PROHIBITED_CONTENT": "content_filter",
    "IMAGE_RECITATION": "content_filter",
}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def usage_from_gemini(meta: dict[str, Any]) -> Usage:
    """``promptTokenCount`` (with ``toolUsePromptTokenCount``) is the input, cached tokens
    included; the output is ``candidatesTokenCount`` plus ``thoughtsTokenCount`` (thinking
    is billed as output)."""
    prompt = _count(meta.get("promptTokenCount")) + _count(meta.get("toolUsePromptTokenCount"))
    output = _count(meta.get("candidatesTokenCount")) + _count(meta.get("thoughtsTokenCount"))
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_read_tokens=min(_count(meta.get("cachedContentTokenCount")), prompt),
    )


def openai_usage(meta: dict[str, Any]) -> dict[str, Any]:
    usage = usage_from_gemini(meta)
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "completion_tokens_details": {"reasoning_tokens": _count(meta.get("thoughtsTokenCount"))},
    }


def finish_reason(reason: Any, called: bool) -> str | None:
    if not isinstance(reason, str) or not reason or reason == "FINISH_REASON_UNSPECIFIED":
        return None
    mapped = _FINISH_REASONS.get(reason, "stop")
    return "tool_calls" if called and mapped == "stop" else mapped


def refusal_text(response: dict[str, Any]) -> str | None:
    """Why Gemini blocked the prompt or stopped the answer, when it did (else None)."""
    feedback = response.get("promptFeedback")
    blocked = feedback.get("blockReason") if isinstance(feedback, dict) else None
    if isinstance(blocked, str) and blocked:
        return f"Gemini blocked the prompt (blockReason: {blocked}){_categories(feedback)}"
    candidate = first_candidate(response)
    reason = candidate.get("finishReason")
    if finish_reason(reason, False) != "content_filter":
        return None
    return f"Gemini stopped the answer (finishReason: {reason}){_categories(candidate)}"


def _categories(holder: Any) -> str:
    ratings = holder.get("safetyRatings") if isinstance(holder, dict) else None
    blocked = [
        str(r.get("category"))
        for r in (ratings if isinstance(ratings, list) else [])
        if isinstance(r, dict) and r.get("blocked")
    ]
    return f": {', '.join(blocked)}" if blocked else ""


def first_candidate(response: dict[str, Any]) -> dict[str, Any]:
    candidates = response.get("candidates")
    if isinstance(candidates, list) and candidates and isinstance(candidates[0], dict):
        return candidates[0]
    return {}


def candidate_parts(candidate: dict[str, Any]) -> list[dict[str, Any]]:
    content = candidate.get("content")
    parts = content.get("parts") if isinstance(content, dict) else None
    return [p for p in parts if isinstance(p, dict)] if isinstance(parts, list) else []


def tool_call(part: dict[str, Any]) -> dict[str, Any] | None:
    """The OpenAI tool call of a ``functionCall`` part, with its id (see ``tools``)."""
    call = part.get("functionCall")
    if not isinstance(call, dict):
        return None
    args = call.get("args")
    arguments = json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False)
    return {
        "id": new_call_id(call.get("id"), part.get("thoughtSignature")),
        "type": "function",
        "function": {"name": call.get("name"), "arguments": arguments},
    }


def thought_text(part: dict[str, Any]) -> str | None:
    """A thought summary's text (``includeThoughts``), answered as ``reasoning_content``."""
    text = part.get("text")
    return text if isinstance(text, str) and text and part.get("thought") is True else None


def answer_text(part: dict[str, Any]) -> str | None:
    """A part's text when it is part of the answer (thought summaries are not)."""
    text = part.get("text")
    if not isinstance(text, str) or part.get("thought") is True:
        return None
    return text


def is_blocked(response: dict[str, Any]) -> bool:
    feedback = response.get("promptFeedback")
    return isinstance(feedback, dict) and bool(feedback.get("blockReason"))


def from_gemini_response(
    resp: dict[str, Any], model: str, created: int, single_call: bool = False
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` as an OpenAI chat.completion object.

    ``single_call`` (``parallel_tool_calls: false``): only the first call is returned."""
    candidate = first_candidate(resp)
    texts: list[str] = []
    thoughts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in candidate_parts(candidate):
        thought = thought_text(part)
        if thought:
            thoughts.append(thought)
            continue
        call = tool_call(part)
        if call is not None:
            if not (single_call and calls):
                calls.append(call)
            continue
        text = answer_text(part)
        if text:
            texts.append(text)
    refusal = refusal_text(resp)
    if is_blocked(resp):
        reason: str | None = "content_filter"
    else:
        reason = finish_reason(candidate.get("finishReason"), bool(calls)) or "stop"
    message: dict[str, Any] = {
        "role": "assistant",
        "content": "".join(texts) if texts or not (calls or refusal) else None,
        "refusal": refusal,
    }
    if calls:
        message["tool_calls"] = calls
    if thoughts:
        message["reasoning_content"] = "".join(thoughts)
    meta = resp.get("usageMetadata")
    version = resp.get("modelVersion")
    response_id = resp.get("responseId")
    return {
        "id": f"chatcmpl-{response_id}" if isinstance(response_id, str) else "chatcmpl-gemini",
        "object": "chat.completion",
        "created": created,
        "model": version if isinstance(version, str) and version else model,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": reason}],
        "usage": openai_usage(meta if isinstance(meta, dict) else {}),
    }
