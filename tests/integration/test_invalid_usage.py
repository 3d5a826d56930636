"""Usage no call can reach (prompt_tokens 10**19): estimate recorded and charged, flagged."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

from tests.integration.budget_support import MESSAGES, budget_yaml, counter, holds, running
from tests.support.fake_upstream import FakeUpstream

ABSURD = 10**19
MODELS = """  - {id: liar, provider: fake, name: liar-model, capabilities: [chat, streaming],
     contextLength: 128000, maxOutputTokens: 4096, price: {input: 0.15, output: 0.60}}"""
CONFIGURATIONS = "  - {id: lying, mode: fixed, model: liar}"


def test_an_absurd_usage_figure_is_recorded_as_the_estimate_and_charged_as_it(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("liar-model", prompt_tokens=ABSURD, completion_tokens=5)
    alice = "budget: {daily: {tokens: 100000}}"
    yaml = budget_yaml(
        upstream.url, sqlite_url, alice=alice, models=MODELS, configurations=CONFIGURATIONS
    )
    with running(yaml) as gateway:
        client = gateway.client()

        def call(index: int) -> str:
            model = "lying" if index % 4 == 0 else "chat"
            answer = client.chat.completions.create(model=model, messages=MESSAGES)
            return answer.choices[0].message.content or ""

        with ThreadPoolExecutor(8) as pool:  # the rows of both kinds share batches
            answers = list(pool.map(call, range(8)))
        stream = client.chat.completions.create(
            model="lying", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        chunks = list(stream)
        rows = gateway.rows(expect=9)
        assert all(answers) and chunks  # every call succeeded
        assert len(rows) == 9  # the good rows are written with the bad ones
        lying = [row for row in rows if row["served_model"] == "liar"]
        assert len(lying) == 3
        for row in lying:
            assert row["usage_source"] == "invalid"
            assert row["actual_input_tokens"] is None and row["actual_cost"] is None
            assert 0 < row["estimated_input_tokens"] < 100
        good = [row for row in rows if row["served_model"] == "small"]
        assert {row["usage_source"] for row in good} == {"provider"}
        # A call's row is written before its budget hold is settled: read the counter
        # once every hold is (the last call's may still be open when its row lands).
        deadline = time.monotonic() + 10
        while holds(gateway) and time.monotonic() < deadline:
            time.sleep(0.05)
        used = counter(gateway, "key", "alice")
        assert used is not None
        estimated = sum(
            row["estimated_input_tokens"] + row["estimated_output_tokens"] for row in lying
        )
        assert used["tokens"] == estimated + 6 * (12 + 7)  # the estimate charged, not 10**19
        assert gateway.runtime.writer.dropped == 0
