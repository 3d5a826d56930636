"""``reasoning_effort`` as Anthropic's extended thinking (pure).

An effort other than ``none`` turns thinking on with a ``budget_tokens`` by effort
(``BUDGETS``), at most half the call's ``max_tokens`` and at least Anthropic's minimum of
1,024 (OpenAI's reasoning tokens count in ``max_completion_tokens``, as Anthropic's
thinking counts in ``max_tokens``). Thinking is left out, and ``reasoning_effort`` listed
as ignored, when Anthropic would refuse it with the rest of the request: a forced tool
(``tool_choice`` required or a named function, or the answer tool of ``response_format``:
thinking cannot force a tool), a ``max_tokens`` too small for the minimum budget, or a
tool loop whose last assistant turn carries no thinking block to send back (the client
did not keep it: a Responses client keeps it with ``include:
["reasoning.encrypted_content"]``). With thinking on, a ``temperature`` other than 1 and
a ``top_p`` below 0.95, which Anthropic refuses beside thinking, are left out and listed.

Earlier thinking blocks (an assistant message's ``thinking_blocks``, as the adapter's
answers carry them) are sent back as they came when thinking is on, and left out when it
is off.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gateway.domain.errors import TranslationError

MIN_BUDGET = 1024
BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384, "xhigh": 32768}
THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})


@dataclass(slots=True)
class ThinkingPlan:
    thinking: dict[str, Any] | None  # the Messages API's ``thinking``, None: off
    ignored: list[str] = field(default_factory=list)


def plan_thinking(
    body: dict[str, Any],
    max_tokens: int,
    messages: list[dict[str, Any]],
    tool_choice: dict[str, Any] | None,
) -> ThinkingPlan:
    effort = body.get("reasoning_effort")
    if effort is None or effort == "none":
        return ThinkingPlan(None)
    if effort not in BUDGETS:
        raise TranslationError(
            f"reasoning_effort must be one of none, {', '.join(BUDGETS)}", "reasoning_effort"
        )
    left_out = ThinkingPlan(None, ["reasoning_effort"])
    if tool_choice is not None and tool_choice.get("type") in ("any", "tool"):
        return left_out
    budget = max(MIN_BUDGET, min(BUDGETS[effort], max_tokens // 2))
    if budget >= max_tokens or _loop_without_thinking(messages):
        return left_out
    return ThinkingPlan({"type": "enabled", "budget_tokens": budget})


def _loop_without_thinking(messages: list[dict[str, Any]]) -> bool:
    """The last assistant turn called tools but carries no thinking block first: Anthropic
    refuses thinking for the turn that continues it."""
    for message in reversed(messages):
        if message["role"] != "assistant":
            continue
        blocks = message["content"]
        calls = any(block.get("type") == "tool_use" for block in blocks)
        return calls and blocks[0].get("type") not in THINKING_TYPES
    return False


def sampling_beside_thinking(out: dict[str, Any], ignored: list[str]) -> None:
    """What Anthropic refuses beside thinking, left out of ``out`` and listed."""
    temperature = out.get("temperature")
    if temperature is not None and temperature != 1:
        del out["temperature"]
        ignored.append("temperature")
    top_p = out.get("top_p")
    if isinstance(top_p, int | float) and top_p < 0.95:
        del out["top_p"]
        ignored.append("top_p")


def thinking_blocks(msg: dict[str, Any], param: str) -> list[dict[str, Any]]:
    """An assistant message's ``thinking_blocks`` as Messages API content blocks."""
    raw = msg.get("thinking_blocks")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TranslationError("thinking_blocks must be an array", f"{param}.thinking_blocks")
    blocks: list[dict[str, Any]] = []
    for j, block in enumerate(raw):
        where = f"{param}.thinking_blocks[{j}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "thinking" and _strings(block, "thinking", "signature"):
            blocks.append(
                {"type": "thinking", "thinking": block["thinking"], "signature": block["signature"]}
            )
        elif kind == "redacted_thinking" and _strings(block, "data"):
            blocks.append({"type": "redacted_thinking", "data": block["data"]})
        else:
            raise TranslationError(
                "a thinking block needs type thinking (thinking, signature) or "
                "redacted_thinking (data)",
                where,
            )
    return blocks


def _strings(block: dict[str, Any], *names: str) -> bool:
    return all(isinstance(block.get(name), str) for name in names)


def without_thinking(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with their thinking blocks left out (thinking is off for this call);
    a message left empty goes, and same-role neighbours merge."""
    out: list[dict[str, Any]] = []
    for message in messages:
        blocks = [b for b in message["content"] if b.get("type") not in THINKING_TYPES]
        if not blocks:
            continue
        if out and out[-1]["role"] == message["role"]:
            out[-1]["content"].extend(blocks)
        else:
            out.append({**message, "content": blocks})
    return out
