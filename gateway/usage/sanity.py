"""Whether the usage an upstream reported can be true of the call (pure).

An upstream's figures go onto the row, into the budgets and the rollups. A figure
no call can reach (``prompt_tokens: 10**19``) would fail the budget settlement
and every telemetry insert holding it, so it is not believed: the call is
recorded with the gateway's own estimate instead (``usage_source = 'invalid'``).

A figure is out of bounds when it is above ``MAX_REPORTED_TOKENS`` (2**31 - 1, the
bound of a request's own ``max_tokens``), or when the request bounds it and it is
more than ``UPSTREAM_ALLOWANCE`` tokens past that bound:

- input: the body's size in bytes (no token is shorter than a byte), unless the
  body names content the upstream expands itself (an image, a file, a part that
  is not text, hosted tools): those are priced in the upstream's own units;
- output: the request's output bound times its choices, when it sets one.

The allowance covers what an upstream adds of its own (a tool-use system prompt,
a stop token).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.domain.usage import Usage

MAX_REPORTED_TOKENS = 2**31 - 1
UPSTREAM_ALLOWANCE = 4096
_TEXT_PARTS = frozenset({"text", "input_text", "output_text"})


def plausible(usage: Usage, input_bound: int | None, output_bound: int | None) -> bool:
    """Whether every figure of ``usage`` is within the bounds (None: only the absolute one)."""
    figures = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_read_tokens,
        usage.cache_write_tokens,
    )
    if any(not 0 <= figure <= MAX_REPORTED_TOKENS for figure in figures):
        return False
    if input_bound is not None and usage.input_tokens > input_bound + UPSTREAM_ALLOWANCE:
        return False
    return output_bound is None or usage.output_tokens <= output_bound + UPSTREAM_ALLOWANCE


def input_bound(body: Mapping[str, Any], body_bytes: int) -> int | None:
    """The body's size, or None when it names content the upstream expands (see above)."""
    if _expands(body):
        return None
    return body_bytes


def _expands(body: Mapping[str, Any]) -> bool:
    tools = body.get("tools")
    if isinstance(tools, list) and any(
        not isinstance(tool, Mapping) or tool.get("type") != "function" for tool in tools
    ):
        return True  # hosted tools (web or file search) read content of their own
    if body.get("web_search_options") is not None:
        return True
    for key in ("messages", "input"):
        items = body.get(key)
        if isinstance(items, list) and any(_has_other_parts(item) for item in items):
            return True
    return False


def _has_other_parts(item: Any) -> bool:
    if not isinstance(item, Mapping):
        return False
    for key in ("content", "output"):
        parts = item.get(key)
        if isinstance(parts, list) and any(
            not isinstance(part, Mapping) or part.get("type") not in _TEXT_PARTS for part in parts
        ):
            return True
    return False
