"""The gate without a reachable database: a database outage never fails a call."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from gateway.budgets import DatabaseBudgets
from gateway.budgets.figures import ONE_REQUEST
from gateway.budgets.store import Hold
from gateway.db.engine import create_engine
from gateway.domain.model import BudgetLimits, BudgetSpec, Configuration, Model
from gateway.domain.settings import ApiKey
from gateway.hooks import Reservation
from gateway.inbound import Endpoint, parse_inbound
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.tokens import CharEstimateCounter, TiktokenCounter
from tests.support.counters import WatchedCounter

REQUEST = parse_inbound(
    Endpoint.CHAT, msgspec.json.encode({"model": "chat", "messages": [{"role": "user"}]})
)
BUDGETED = Configuration(id="chat", mode="fixed", budget=BudgetSpec(daily=BudgetLimits(requests=5)))


def _no_models() -> list[Model]:
    return []


def _gate(url: str) -> DatabaseBudgets:
    return DatabaseBudgets(create_engine(url), CharEstimateCounter(), hold_seconds=60)


async def test_a_call_without_any_budget_never_touches_the_database() -> None:
    gate = _gate("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    key = ApiKey(id="alice", key_hash="0" * 64)
    unbudgeted = Configuration(id="chat", mode="fixed")
    assert await gate.reserve(key, unbudgeted, REQUEST, _no_models) is None


@pytest.mark.parametrize(
    "url",
    ["postgresql+asyncpg://nobody@127.0.0.1:1/none", "sqlite+aiosqlite:////nonexistent/dir/x.db"],
)
async def test_an_unreachable_budget_database_admits_the_call_unchecked_and_counts_it(
    url: str,
) -> None:
    gate = _gate(url)
    assert await gate.reserve(None, BUDGETED, REQUEST, _no_models) is None
    assert gate.unchecked == 1


async def test_a_settlement_that_cannot_reach_the_database_does_not_fail_the_call() -> None:
    gate = _gate("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    record = TelemetryRecord(
        created_at=datetime.now(UTC),
        correlation_id="c",
        operation="chat",
        configuration="chat",
        success=True,
        http_status=200,
        latency_ms=1.0,
    )
    await gate.settle(Reservation(Hold("r" * 32, (), ONE_REQUEST)), record)


async def test_a_reservation_settles_once_whoever_asks_again() -> None:
    gate = _gate("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    reservation = Reservation(Hold("r" * 32, (), ONE_REQUEST))
    record = TelemetryRecord(
        created_at=datetime.now(UTC),
        correlation_id="c",
        operation="chat",
        configuration="chat",
        success=True,
        http_status=200,
        latency_ms=1.0,
    )
    await gate.settle(reservation, record)
    assert reservation.token is None  # a second settle finds nothing to settle
    await gate.settle(reservation, record)


async def test_the_hold_counts_the_prompt_once_per_encoding_for_every_candidate_model() -> None:
    counter = WatchedCounter(inner=TiktokenCounter())
    gate = DatabaseBudgets(
        create_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none"), counter, hold_seconds=60
    )
    metered = Configuration(
        id="chat", mode="fixed", budget=BudgetSpec(daily=BudgetLimits(tokens=9))
    )
    request = parse_inbound(
        Endpoint.CHAT,
        msgspec.json.encode({"model": "chat", "messages": [{"role": "user", "content": "hi"}]}),
    )
    names = ["gpt-4o", "gpt-4o-mini", "gpt-4", "claude-3-5-sonnet"]
    candidates = [Model(id=name, provider="p", name=name) for name in names]
    await gate.reserve(None, metered, request, lambda: candidates)  # then the database fails
    assert set(request.token_counts) == {"o200k_base", "cl100k_base"}
    assert len([c for c in counter.counted if c.text_chars == 2]) == 2  # "hi", per encoding
