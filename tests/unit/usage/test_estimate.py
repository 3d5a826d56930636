"""Estimates: small texts counted inline, large ones in a worker thread, huge ones bounded."""

from __future__ import annotations

import threading
from pathlib import Path

import msgspec
import pytest
import tiktoken

from gateway.domain.model import Endpoint
from gateway.domain.usage import TokenCount
from gateway.inbound import InboundRequest, parse_inbound
from gateway.usage.estimate import (
    INLINE_CHARS,
    count_prompt_bounded,
    count_text_bounded,
    known_prompt_tokens,
    prompt_tokens,
    prompt_upper_bound,
    text_tokens,
)
from gateway.usage.prompt import count_request_tokens
from gateway.usage.tally import utf8_size
from gateway.usage.tokens import CharEstimateCounter, TiktokenCounter
from tests.support.counters import WatchedCounter

CHARS = CharEstimateCounter()


def _chat(content: str) -> InboundRequest:
    body = {"model": "chat", "messages": [{"role": "user", "content": content}]}
    return parse_inbound(Endpoint.CHAT, msgspec.json.encode(body))


def test_a_small_prompt_is_counted_on_the_spot_and_remembered() -> None:
    counter = WatchedCounter(inner=CHARS)
    request = _chat("hello there")
    first = known_prompt_tokens(counter, request, "gpt-4o")
    assert first == TokenCount(count_request_tokens(CHARS, request.body, Endpoint.CHAT, "gpt-4o"))
    assert known_prompt_tokens(counter, request, "gpt-4") == first  # the same encoding
    assert {c.thread for c in counter.counted} == {threading.current_thread().name}
    assert len(counter.counted) == 2  # "user" and the content, once


def test_a_large_prompt_is_not_counted_on_the_spot() -> None:
    counter = WatchedCounter(inner=CHARS)
    request = _chat("word " * INLINE_CHARS)
    assert known_prompt_tokens(counter, request, "gpt-4o") is None
    assert counter.counted == []


async def test_a_large_prompt_is_counted_once_in_a_counting_thread() -> None:
    counter = WatchedCounter(inner=CHARS)
    request = _chat("word " * INLINE_CHARS)
    counted = await prompt_tokens(counter, request, "gpt-4o")
    assert await prompt_tokens(counter, request, "gpt-4o") == counted
    assert counted == TokenCount(count_request_tokens(CHARS, request.body, Endpoint.CHAT, "gpt-4o"))
    threads = {c.thread for c in counter.counted}
    assert len(threads) == 1 and threads.pop().startswith("token-count")
    assert len(counter.counted) == 2


async def test_each_encoding_is_counted_once(tiktoken_encodings: Path) -> None:
    counter = WatchedCounter(inner=TiktokenCounter())
    request = _chat("Bonjour, où est la gare ? " * 1_000)
    for model in ("gpt-4o", "gpt-4o-mini", "gpt-4", "gpt-3.5-turbo", "o3-mini"):
        await prompt_tokens(counter, request, model)
    assert set(request.token_counts) == {"o200k_base", "cl100k_base"}
    assert len([c for c in counter.counted if c.text_chars > 1000]) == 2
    cl100k = tiktoken.get_encoding("cl100k_base")
    content = request.body["messages"][0]["content"]
    assert request.token_counts["cl100k_base"].tokens == 3 + 1 + 3 + len(
        cl100k.encode_ordinary(content)
    )


def test_past_the_exact_size_the_rest_counts_by_its_utf8_size(tiktoken_encodings: Path) -> None:
    counter = TiktokenCounter()
    text = "Voilà une très longue réponse, avec des accents. " * 400
    exact = counter.count_text(text, "gpt-4o")
    bounded = count_text_bounded(counter, text, "gpt-4o", exact_chars=5_000)
    assert bounded.upper_bound
    assert bounded.tokens > exact
    head = text[: text.rfind(" ", 0, 5_001)]
    assert bounded.tokens == counter.count_text(head, "gpt-4o") + utf8_size(text[len(head) :])
    assert count_text_bounded(counter, text, "gpt-4o") == TokenCount(exact)  # under 1 MiB


def test_a_prompt_past_the_exact_size_is_an_upper_bound(tiktoken_encodings: Path) -> None:
    counter = TiktokenCounter()
    request = _chat("数据 " * 10_000)
    exact = count_request_tokens(counter, request.body, Endpoint.CHAT, "gpt-4o")
    bounded = count_prompt_bounded(counter, request, "gpt-4o", exact_chars=1_000)
    assert bounded.upper_bound and bounded.tokens >= exact
    assert count_prompt_bounded(counter, request, "gpt-4o") == TokenCount(exact)
    assert prompt_upper_bound(request).tokens >= exact
    assert prompt_upper_bound(request).upper_bound


def test_an_exact_count_below_the_bound_is_not_marked(tiktoken_encodings: Path) -> None:
    bounded = count_prompt_bounded(TiktokenCounter(), _chat("short"), "gpt-4o")
    assert not bounded.upper_bound


async def test_output_text_is_counted_inline_when_small_and_in_a_thread_when_large() -> None:
    counter = WatchedCounter(inner=CHARS)
    assert await text_tokens(counter, "abcdefgh", "m") == TokenCount(2)
    large = "x" * (INLINE_CHARS + 1)
    assert await text_tokens(counter, large, "m") == TokenCount((len(large) + 3) // 4)
    threads = [c.thread for c in counter.counted]
    assert threads[0] == threading.current_thread().name
    assert threads[1].startswith("token-count")


@pytest.mark.parametrize("endpoint", [Endpoint.EMBEDDINGS, Endpoint.COMPLETIONS])
def test_other_endpoints_count_their_own_prompt_field(endpoint: Endpoint) -> None:
    field = "input" if endpoint is Endpoint.EMBEDDINGS else "prompt"
    request = parse_inbound(endpoint, msgspec.json.encode({"model": "m", field: "abcdefgh"}))
    assert known_prompt_tokens(CHARS, request, "m") == TokenCount(2)
