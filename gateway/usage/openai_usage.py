"""Read an OpenAI-shaped ``usage`` object into the domain's ``Usage`` (pure).

Upstreams differ and some send garbage, so every field is checked: a usage
without an integer ``prompt_tokens`` is no usage at all; other fields that are
missing, null or not integers count 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.domain.usage import Usage


def _count(value: Any) -> int | None:
    # bool is an int subclass; True is not a token count.
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


def _cached_tokens(usage: Mapping[str, Any]) -> int:
    details = usage.get("prompt_tokens_details")
    if isinstance(details, Mapping):
        cached = _count(details.get("cached_tokens"))
        if cached is not None:
            return cached
    # DeepSeek reports its context cache this way.
    return _count(usage.get("prompt_cache_hit_tokens")) or 0


def _cache_write_tokens(usage: Mapping[str, Any]) -> int:
    # OpenRouter reports prompt-cache writes next to the reads.
    details = usage.get("prompt_tokens_details")
    if isinstance(details, Mapping):
        return _count(details.get("cache_write_tokens")) or 0
    return 0


def usage_from_openai(usage: Mapping[str, Any] | None) -> Usage | None:
    """``prompt_tokens`` → input, ``completion_tokens`` → output (absent for
    embeddings: 0), ``prompt_tokens_details.cached_tokens`` → cache reads."""
    if not isinstance(usage, Mapping):
        return None
    prompt = _count(usage.get("prompt_tokens"))
    if prompt is None:
        return None
    completion = _count(usage.get("completion_tokens")) or 0
    # Cache tokens are part of the prompt: never let a bad report exceed it.
    cache_read = min(_cached_tokens(usage), prompt)
    cache_write = min(_cache_write_tokens(usage), prompt - cache_read)
    return Usage(
        input_tokens=prompt,
        output_tokens=completion,
        cache_read_tokens=cache_read,
        cache_write_tokens=cache_write,
    )


def usage_from_responses(usage: Mapping[str, Any] | None) -> Usage | None:
    """The Responses API's ``usage``: ``input_tokens`` → input, ``output_tokens`` → output,
    ``input_tokens_details.cached_tokens`` (and ``cache_write_tokens``) → cache reads
    (writes). Without an integer ``input_tokens`` it is no usage at all."""
    if not isinstance(usage, Mapping):
        return None
    prompt = _count(usage.get("input_tokens"))
    if prompt is None:
        return None
    output = _count(usage.get("output_tokens")) or 0
    details = usage.get("input_tokens_details")
    cached = written = 0
    if isinstance(details, Mapping):
        cached = _count(details.get("cached_tokens")) or 0
        written = _count(details.get("cache_write_tokens")) or 0
    cache_read = min(cached, prompt)
    return Usage(
        input_tokens=prompt,
        output_tokens=output,
        cache_read_tokens=cache_read,
        cache_write_tokens=min(written, prompt - cache_read),
    )
