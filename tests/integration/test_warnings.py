"""What the server warns about, one line each: upstream failures, a circuit opening, a
budget refusal, missing tiktoken encodings; and one access line per call."""

from __future__ import annotations

import logging
from pathlib import Path

import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.routed import MESSAGES, routed_yaml

MODELS = "  - {id: a, provider: p-a, name: model-a, capabilities: [chat]}"
CONFIGURATIONS = """
  - {id: only-a, mode: fixed, model: a}
  - {id: once-a-day, mode: fixed, model: a, budget: {daily: {requests: 1}}}
"""


def _yaml(upstream: FakeUpstream, url: str) -> str:
    return routed_yaml(
        upstream.url,
        url,
        models=MODELS,
        configurations=CONFIGURATIONS,
        providers=["p-a"],
        circuit_breaker="{failureThreshold: 2, cooldownSeconds: 30}",
    )


def _lines(caplog: pytest.LogCaptureFixture, level: int, logger: str) -> list[str]:
    return [
        r.getMessage() for r in caplog.records if r.levelno == level and r.name.startswith(logger)
    ]


def test_upstream_failures_and_the_circuit_opening_warn_once_each(
    upstream: FakeUpstream, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = RunningGateway(_yaml(upstream, sqlite_url))
    try:
        upstream.behave("model-a", fail_always=503)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            for _ in range(2):
                with pytest.raises(openai.APIStatusError):
                    gateway.client().chat.completions.create(model="only-a", messages=MESSAGES)
    finally:
        gateway.stop()
    warnings = _lines(caplog, logging.WARNING, "gateway")
    failures = [w for w in warnings if w.startswith("upstream p-a failed for model a: ")]
    assert len(failures) == 2 and "HTTP 503" in failures[0]
    opened = [w for w in warnings if w.startswith("circuit opened for provider p-a")]
    assert opened == ["circuit opened for provider p-a: its calls are refused for 30 s"]
    assert "sk-upstream-p-a" not in caplog.text  # the provider key is never logged
    access = _lines(caplog, logging.INFO, "gateway.access")
    assert len(access) == 2
    assert all(" 502 configuration=only-a model=- " in line for line in access)
    assert access[0].endswith(" error=upstream_5xx")


def test_a_budget_refusal_warns_with_the_budget_it_hit(
    upstream: FakeUpstream, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    gateway = RunningGateway(_yaml(upstream, sqlite_url))
    try:
        client = gateway.client()
        client.chat.completions.create(model="once-a-day", messages=MESSAGES)
        caplog.clear()
        with caplog.at_level(logging.WARNING), pytest.raises(openai.RateLimitError):
            client.chat.completions.create(model="once-a-day", messages=MESSAGES)
    finally:
        gateway.stop()
    (line,) = _lines(caplog, logging.WARNING, "gateway")
    assert line.startswith("budget refused call ")
    assert "configuration 'once-a-day' daily requests budget of 1 requests" in line


def test_missing_encodings_warn_once_at_start_naming_tiktoken_and_the_variable(
    upstream: FakeUpstream,
    sqlite_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.WARNING):
        gateway = RunningGateway(_yaml(upstream, sqlite_url))
        try:
            for _ in range(2):
                gateway.client().chat.completions.create(model="only-a", messages=MESSAGES)
        finally:
            gateway.stop()
    (line,) = [w for w in _lines(caplog, logging.WARNING, "gateway") if "tiktoken" in w]
    assert f"TIKTOKEN_CACHE_DIR={tmp_path}" in line
    # Only the encodings the configured models need are loaded, so only they are named:
    # model-a is no OpenAI model, which cl100k_base then counts.
    assert "(cl100k_base;" in line and "characters/4" in line
    assert "gateway tokenizer fetch" in line


def test_no_encoding_warning_when_the_encodings_load(
    upstream: FakeUpstream,
    sqlite_url: str,
    caplog: pytest.LogCaptureFixture,
    tiktoken_encodings: Path,
) -> None:
    with caplog.at_level(logging.WARNING):
        RunningGateway(_yaml(upstream, sqlite_url)).stop()
    assert "tiktoken" not in caplog.text
