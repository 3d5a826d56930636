"""A token budget holds what a body really sends upstream: schemas, files, unknown fields."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from tests.integration.budget_support import MESSAGES, budget_yaml, counter, running
from tests.support.fake_upstream import FakeUpstream

# Over 40 KB of schema: at least 40,000 tokens by size, far past a 3,000-token budget.
SCHEMA = {
    "type": "object",
    "properties": {f"f{i}": {"type": "string", "description": "y" * 90} for i in range(400)},
}
FILE_DATA = "data:application/pdf;base64," + "QUJD" * 12_000
CHAT_HEAVY = {
    "response_format": {
        "response_format": {"type": "json_schema", "json_schema": {"name": "big", "schema": SCHEMA}}
    },
    "file-part": {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Summarise."},
                    {"type": "file", "file": {"filename": "a.pdf", "file_data": FILE_DATA}},
                ],
            }
        ]
    },
    "functions": {"functions": [{"name": "f", "parameters": SCHEMA}]},
}
RESPONSES_HEAVY = {
    "text.format": {
        "input": "hi",
        "text": {"format": {"type": "json_schema", "name": "big", "schema": SCHEMA}},
    },
    "input_file": {
        "input": [
            {
                "role": "user",
                "content": [{"type": "input_file", "filename": "a.pdf", "file_data": FILE_DATA}],
            }
        ]
    },
}


def test_a_call_carrying_a_large_schema_or_file_is_refused_by_its_real_size(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    alice = "budget: {daily: {tokens: 3000}}"
    with running(budget_yaml(upstream.url, sqlite_url, alice=alice)) as gateway:
        client = gateway.client()
        # The same call with a small schema fits: the budget is not what refuses.
        small = {"type": "json_schema", "json_schema": {"name": "s", "schema": {"type": "object"}}}
        client.chat.completions.create(
            model="chat", messages=MESSAGES, max_tokens=100, extra_body={"response_format": small}
        )
        refused: list[str] = []
        for name, extra in CHAT_HEAVY.items():
            body: dict[str, Any] = {"messages": MESSAGES, **extra}
            with pytest.raises(openai.RateLimitError) as caught:
                client.chat.completions.create(model="chat", max_tokens=100, **body)
            refused.append(name)
            assert "daily tokens budget of 3000 tokens" in str(caught.value)
        for name, extra in RESPONSES_HEAVY.items():
            with pytest.raises(openai.RateLimitError):
                client.responses.create(model="chat", max_output_tokens=100, **extra)
            refused.append(name)
        with pytest.raises(openai.RateLimitError):
            client.embeddings.create(
                model="embed", input="hi", extra_body={"custom_context": SCHEMA}
            )
        refused.append("embeddings")
        assert upstream.calls["small-model"] == 1  # only the small call went upstream
        assert upstream.calls["embed-model"] == 0
        assert len(refused) == 6
        used = counter(gateway, "key", "alice")
        assert used is not None and used["tokens"] < 3000
