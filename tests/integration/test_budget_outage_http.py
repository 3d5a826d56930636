"""Budgets when the database fails, through the real gateway on every database.

An unreachable database is an outage (``budgets.onDatabaseOutage``); any other
database error refuses the call.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import text

from tests.integration.budget_support import (
    HTTP_BACKENDS,
    MESSAGES,
    budget_yaml,
    chat_body,
    counter,
    database,
    holds,
    outage,
    running,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import OTHER_KEY, TEST_KEY, RunningGateway

ONE_CALL_TOKENS = 12 + 7  # the fake upstream's usage


def _post(gateway: RunningGateway, body: dict[str, Any], key: str = TEST_KEY) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json=body,
        headers={"authorization": f"Bearer {key}"},
        timeout=20,
    )


def _stream(gateway: RunningGateway) -> int:
    with httpx.stream(
        "POST",
        f"{gateway.url}/v1/chat/completions",
        json=chat_body(stream=True),
        headers={"authorization": f"Bearer {TEST_KEY}"},
        timeout=20,
    ) as response:
        response.read()
        return response.status_code


def _wait_for(condition: Callable[[], bool], seconds: float = 15) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.05)


def _metric(gateway: RunningGateway, name: str) -> float:
    for line in httpx.get(f"{gateway.url}/metrics").text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_calls_admitted_during_an_outage_are_charged_when_the_database_is_back(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    alice = "budget: {daily: {requests: 5}}"
    with (
        database(backend, tmp_path) as url,
        running(budget_yaml(upstream.url, url, alice=alice)) as gateway,
    ):
        for _ in range(2):
            assert _post(gateway, chat_body()).status_code == 200
        with outage(gateway):
            admitted = [_post(gateway, chat_body()).status_code for _ in range(4)]
            admitted.append(_stream(gateway))
            # This process alone owes 5 now: past the limit whatever the database says.
            refused = _post(gateway, chat_body())
            assert _post(gateway, chat_body(), OTHER_KEY).status_code == 200  # no budget
            assert _metric(gateway, "gateway_budget_pending_calls") == 5
        assert admitted == [200] * 5
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "budget_exceeded"
        # Back: what is owed counts at once, before it is even charged.
        assert _post(gateway, chat_body()).status_code == 429
        _wait_for(lambda: (counter(gateway, "key", "alice") or {}).get("requests") == 7)
        used = counter(gateway, "key", "alice")
        assert used is not None and used["tokens"] == 7 * ONE_CALL_TOKENS
        served = [r for r in gateway.rows(expect=10) if r["api_key_id"] == "alice" and r["success"]]
        assert len(served) == 7
        assert float(used["cost"]) == pytest.approx(float(sum(r["actual_cost"] for r in served)))
        assert _post(gateway, chat_body()).status_code == 429
        assert upstream.calls["small-model"] == 2 + 5 + 1
        assert _metric(gateway, "gateway_budget_unchecked_calls") == 5
        assert _metric(gateway, "gateway_budget_pending_calls") == 0
        assert holds(gateway) == 0  # no marker or hold left behind


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_under_refuse_an_outage_answers_503_budget_unavailable_with_a_row(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    alice = "budget: {daily: {requests: 5}}"
    extra = "budgets: {onDatabaseOutage: refuse}"
    with (
        database(backend, tmp_path) as url,
        running(budget_yaml(upstream.url, url, alice=alice, extra=extra)) as gateway,
    ):
        with outage(gateway):
            refused = _post(gateway, chat_body())
            assert _post(gateway, chat_body(), OTHER_KEY).status_code == 200  # no budget
        assert refused.status_code == 503
        error = refused.json()["error"]
        assert (error["code"], error["type"]) == ("budget_unavailable", "api_error")
        assert upstream.calls["small-model"] == 1
        rows = gateway.rows(expect=2)
        (row,) = [r for r in rows if r["api_key_id"] == "alice"]
        assert (row["http_status"], row["error_class"]) == (503, "budget_unavailable")
        assert row["provider"] is None
        assert _metric(gateway, "gateway_budget_unchecked_calls") == 0
        assert _post(gateway, chat_body()).status_code == 200  # back: checked again


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_database_error_that_is_not_an_outage_refuses_the_call_with_a_500(
    backend: str, upstream: FakeUpstream, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    alice = "budget: {daily: {requests: 5}}"
    with (
        database(backend, tmp_path) as url,
        running(budget_yaml(upstream.url, url, alice=alice)) as gateway,
    ):

        async def rename(old: str, new: str) -> None:
            async with gateway.runtime.engine.begin() as connection:
                await connection.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))

        gateway.server.run(rename("budget_reservations", "budget_reservations_away"))
        budget_log = logging.getLogger("gateway.budgets")  # the app's logging config is set now
        budget_log.addHandler(caplog.handler)
        try:
            response = _post(gateway, chat_body())
        finally:
            budget_log.removeHandler(caplog.handler)
            gateway.server.run(rename("budget_reservations_away", "budget_reservations"))
        assert response.status_code == 500
        error = response.json()["error"]
        assert (error["code"], error["type"]) == ("internal_error", "api_error")
        assert upstream.calls["small-model"] == 0
        (row,) = gateway.rows(expect=1)
        assert (row["http_status"], row["error_class"]) == (500, "budget_error")
        # One record may reach caplog's handler twice (through this logger and the root).
        records = {id(r): r for r in caplog.records if "budget check failed" in r.getMessage()}
        logged = [r.getMessage() for r in records.values()]
        assert len(logged) == 1 and "parameters" not in logged[0]
        assert _metric(gateway, "gateway_budget_unchecked_calls") == 0
        assert _post(gateway, chat_body()).status_code == 200


def test_a_bound_out_of_range_is_a_400_before_any_hold(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    configurations = "  - {id: tight, mode: fixed, model: small, budget: {daily: {tokens: 1000}}}"
    with running(budget_yaml(upstream.url, sqlite_url, configurations=configurations)) as gateway:
        client = gateway.client()
        for field, value in (("max_tokens", 100_000_000_000_000), ("n", 129), ("n", 0)):
            with pytest.raises(openai.BadRequestError) as caught:
                client.chat.completions.create(
                    model="tight", messages=MESSAGES, extra_body={field: value}
                )
            body = caught.value.body
            assert isinstance(body, dict)
            assert (body["code"], body["param"]) == ("invalid_request", field)
        assert upstream.calls["small-model"] == 0
        assert counter(gateway, "configuration", "tight") is None  # nothing was held


def test_a_null_max_completion_tokens_does_not_hide_max_tokens_from_the_hold(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    configurations = "  - {id: tight, mode: fixed, model: small, budget: {daily: {tokens: 50000}}}"
    with running(budget_yaml(upstream.url, sqlite_url, configurations=configurations)) as gateway:
        body = chat_body("tight", max_completion_tokens=None, max_tokens=100_000)
        response = _post(gateway, body)
        assert response.status_code == 429, response.text
        assert "tokens budget of 50000 tokens" in response.json()["error"]["message"]
        assert upstream.calls["small-model"] == 0


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_call_that_ends_during_an_outage_is_settled_when_the_database_is_back(
    backend: str, upstream: FakeUpstream, tmp_path: Path
) -> None:
    upstream.behave("small-model", latency_ms=1500)
    alice = "budget: {daily: {tokens: 100000}}"
    with (
        database(backend, tmp_path) as url,
        running(budget_yaml(upstream.url, url, alice=alice)) as gateway,
    ):
        answers: list[int] = []
        caller = threading.Thread(
            target=lambda: answers.append(_post(gateway, chat_body()).status_code)
        )
        caller.start()
        _wait_for(lambda: holds(gateway) == 1)  # admitted with a hold of its worst case
        with outage(gateway):
            caller.join(timeout=20)
            assert answers == [200]
            assert _metric(gateway, "gateway_budget_pending_calls") == 1  # its settlement waits
        _wait_for(lambda: holds(gateway) == 0)
        used = counter(gateway, "key", "alice")
        assert used is not None and (used["requests"], used["tokens"]) == (1, ONE_CALL_TOKENS)
        assert _metric(gateway, "gateway_budget_pending_calls") == 0
