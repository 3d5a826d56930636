"""Token usage as an upstream reported it (or as estimated)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int
    output_tokens: int
    # Of input_tokens: read from the provider's prompt cache / written to it.
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
