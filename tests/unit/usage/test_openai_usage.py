"""usage_from_openai reads every OpenAI-shaped usage and refuses what is not one."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.usage import Usage
from gateway.usage.openai_usage import usage_from_openai


def test_chat_usage_maps_prompt_and_completion_tokens() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}
    assert usage_from_openai(usage) == Usage(input_tokens=10, output_tokens=4)


def test_embeddings_usage_without_completion_tokens_counts_zero_output() -> None:
    assert usage_from_openai({"prompt_tokens": 8, "total_tokens": 8}) == Usage(8, 0)


def test_cached_tokens_become_cache_reads() -> None:
    usage = {
        "prompt_tokens": 2000,
        "completion_tokens": 10,
        "prompt_tokens_details": {"cached_tokens": 1536, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0},
    }
    assert usage_from_openai(usage) == Usage(2000, 10, cache_read_tokens=1536)


def test_deepseek_cache_hits_become_cache_reads() -> None:
    usage = {"prompt_tokens": 100, "completion_tokens": 1, "prompt_cache_hit_tokens": 64}
    assert usage_from_openai(usage) == Usage(100, 1, cache_read_tokens=64)


def test_cache_writes_in_prompt_details_are_read() -> None:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 1,
        "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 50},
    }
    assert usage_from_openai(usage) == Usage(100, 1, cache_read_tokens=10, cache_write_tokens=50)


def test_cache_tokens_never_exceed_the_prompt() -> None:
    usage = {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 99}}
    assert usage_from_openai(usage) == Usage(10, 0, cache_read_tokens=10)


@pytest.mark.parametrize(
    "usage",
    [
        None,
        {},
        {"completion_tokens": 3},
        {"prompt_tokens": None, "completion_tokens": 3},
        {"prompt_tokens": "10"},
        {"prompt_tokens": 1.5},
        {"prompt_tokens": True},
        {"prompt_tokens": -1},
        "not a mapping",
        [1, 2],
    ],
)
def test_usage_without_an_integer_prompt_count_is_none(usage: Any) -> None:
    assert usage_from_openai(usage) is None


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 5, "completion_tokens": None, "prompt_tokens_details": None},
        {
            "prompt_tokens": 5,
            "completion_tokens": "7",
            "prompt_tokens_details": {"cached_tokens": None},
        },
        {"prompt_tokens": 5, "completion_tokens": -2, "prompt_tokens_details": "x"},
    ],
)
def test_odd_secondary_fields_count_zero(usage: dict[str, Any]) -> None:
    assert usage_from_openai(usage) == Usage(5, 0)
