"""Counting tokens never holds the event loop, and a prompt is counted once per request.

The counter is the real one, watched: it records which thread counted each text and
holds the count of a large text until the test releases it. While it is held, the
gateway must still answer: a count on the event loop would hold every other call
(and /healthz) with it. Tests assert the order of events, never a duration; a
timeout only turns a frozen loop into a failure instead of a hang.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from gateway.usage.tokens import TiktokenCounter
from tests.integration.budget_support import MESSAGES, budget_yaml
from tests.support.counters import WatchedCounter
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway

BIG = 100_000  # characters: a text this long is held by the watched counter
BIG_PROMPT = "Please read the whole contract below and list every obligation. " * 3_200
BUDGET = "budget: {daily: {tokens: 1000000000}}"


@pytest.fixture
def counter() -> Iterator[WatchedCounter]:
    watched = WatchedCounter(hold_chars=BIG)
    yield watched
    watched.release.set()  # never leave a gateway thread waiting


@contextmanager
def gateway_with(
    counter: WatchedCounter, upstream: FakeUpstream, tmp_path: Path
) -> Iterator[RunningGateway]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    gateway = RunningGateway(budget_yaml(upstream.url, url, alice=BUDGET), counter=counter)
    try:
        yield gateway
    finally:
        gateway.stop()


def _in_background(call: Callable[[], Any]) -> tuple[threading.Thread, dict[str, Any]]:
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = call()
        except Exception as exc:  # reported by the test, not lost in the thread
            result["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, result


def _answers_while_held(gateway: RunningGateway, counter: WatchedCounter) -> None:
    """While the large count is held, /healthz and a small budgeted call are answered."""
    assert counter.holding.wait(20), "the large text was never counted"
    probe = httpx.get(f"{gateway.url}/healthz", timeout=10)
    assert probe.status_code == 200
    small = gateway.client(timeout=10).chat.completions.create(model="chat", messages=MESSAGES)
    assert small.choices[0].message.content


def test_a_huge_prompt_is_counted_off_the_loop_while_other_calls_are_answered(
    counter: WatchedCounter, upstream: FakeUpstream, tmp_path: Path
) -> None:
    with gateway_with(counter, upstream, tmp_path) as gateway:
        messages = [{"role": "user", "content": BIG_PROMPT}]
        big, result = _in_background(
            lambda: gateway.client().chat.completions.create(model="chat", messages=messages)
        )
        try:
            _answers_while_held(gateway, counter)
            # The small call was forwarded and answered before the big one's hold was taken.
            assert upstream.calls["small-model"] == 1 and big.is_alive()
        finally:
            counter.release.set()
            big.join(30)
        assert "error" not in result and result["value"].choices[0].message.content
        assert upstream.calls["small-model"] == 2
        held = counter.threads_that_counted(BIG)
        assert held and all(name.startswith("token-count") for name in held)
        assert [row["success"] for row in gateway.rows(expect=2)] == [1, 1]


def test_a_stream_estimate_of_a_large_answer_is_counted_off_the_loop(
    counter: WatchedCounter, upstream: FakeUpstream, tmp_path: Path
) -> None:
    answer = "The obligations are listed below, one by one, with their dates. " * 2_000
    upstream.behave("small-model", report_usage=False, stream_pieces=[answer])
    with gateway_with(counter, upstream, tmp_path) as gateway:

        def stream() -> str:
            chunks = gateway.client().chat.completions.create(
                model="chat", messages=MESSAGES, stream=True
            )
            return "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)

        reader, result = _in_background(stream)
        try:
            _answers_while_held(gateway, counter)
        finally:
            counter.release.set()
            reader.join(30)
        assert result.get("value") == answer
        held = counter.threads_that_counted(BIG)
        assert held and all(name.startswith("token-count") for name in held)
        row = next(r for r in gateway.rows(expect=2) if r["operation"] == "stream")
        assert row["success"] == 1 and row["usage_source"] == "estimated"
        # Counted as it went by, yet exactly what counting the whole answer gives.
        assert row["estimated_output_tokens"] == TiktokenCounter().count_text(answer, "small")


def test_a_client_closing_at_done_does_not_cut_the_answer_s_count_short(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    """The openai SDK closes its connection at [DONE]. An answer shorter than the stream's
    counting buffer yet long enough to be counted off the loop is counted after [DONE]
    has gone out: that close is not a hang-up, the row holds the exact count."""
    counter = WatchedCounter(hold_chars=20_000)
    answer = "Each clause is quoted in full, then explained in plain words. " * 400  # 25,200
    upstream.behave("small-model", report_usage=False, stream_pieces=[answer])
    with gateway_with(counter, upstream, tmp_path) as gateway:
        body = {"model": "chat", "messages": MESSAGES, "stream": True}
        headers = {"Authorization": f"Bearer {TEST_KEY}"}
        with (
            httpx.Client(timeout=20) as client,
            client.stream(
                "POST", f"{gateway.url}/v1/chat/completions", json=body, headers=headers
            ) as response,
        ):
            for line in response.iter_lines():
                if line == "data: [DONE]":
                    break  # closed here, as the SDK does, while the answer is still counted
        assert counter.holding.wait(20), "the answer was never counted"
        counter.release.set()
        row = gateway.rows(expect=1)[0]
        assert row["success"] == 1 and row["usage_source"] == "estimated"
        assert row["estimated_output_tokens"] == TiktokenCounter().count_text(answer, "small")


def test_the_budget_hold_and_the_final_estimate_count_the_prompt_once(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    counter = WatchedCounter()  # holds nothing
    upstream.behave("small-model", report_usage=False)
    with gateway_with(counter, upstream, tmp_path) as gateway:
        messages = [{"role": "user", "content": BIG_PROMPT}]
        answer = gateway.client().chat.completions.create(model="chat", messages=messages)
        assert answer.choices[0].message.content
        (row,) = gateway.rows(expect=1)
    assert row["usage_source"] == "estimated"
    exact = TiktokenCounter().count_text(BIG_PROMPT, "small-model")
    assert row["estimated_input_tokens"] == exact + 3 + 1 + 3  # message framing, "user"
    assert len([c for c in counter.counted if c.text_chars >= BIG]) == 1


def test_small_prompts_are_counted_on_the_loop_without_a_thread_hop(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    counter = WatchedCounter()
    with gateway_with(counter, upstream, tmp_path) as gateway:
        gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
        loop_thread = gateway.server.thread.name
    threads = {c.thread for c in counter.counted}
    assert threads == {loop_thread}
