"""Token usage as an upstream reported it, and token counts the gateway estimated."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class UsageSource(StrEnum):
    """Where a call's token figures come from (the row's ``usage_source``)."""

    PROVIDER = "provider"  # the upstream reported usage
    ESTIMATED = "estimated"  # something answered without usage: the gateway counted
    # The upstream reported usage no call can reach (usage/sanity.py): the gateway counted.
    INVALID = "invalid"
    NONE = "none"  # nothing answered, or the cache did


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int
    # Of input_tokens: read from the provider's prompt cache / written to it.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0


@dataclass(frozen=True, slots=True)
class TokenCount:
    """An estimated token count; ``upper_bound`` when part of the text was too large to count
    exactly and counted by its UTF-8 size instead (a byte-level BPE token is at least a byte)."""

    tokens: int
    upper_bound: bool = False
