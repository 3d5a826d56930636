"""The gate without a reachable database: refuse with 503 rather than admit unbounded."""

from __future__ import annotations

from datetime import UTC, datetime

import msgspec
import pytest

from gateway.budgets import BudgetUnavailable, DatabaseBudgets
from gateway.budgets.figures import ONE_REQUEST
from gateway.budgets.store import Hold
from gateway.db.engine import create_engine
from gateway.domain.model import BudgetLimits, BudgetSpec, Configuration
from gateway.domain.settings import ApiKey
from gateway.hooks import Reservation
from gateway.inbound import Endpoint, parse_inbound
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.tokens import CharEstimateCounter

REQUEST = parse_inbound(
    Endpoint.CHAT, msgspec.json.encode({"model": "chat", "messages": [{"role": "user"}]})
)
BUDGETED = Configuration(id="chat", mode="fixed", budget=BudgetSpec(daily=BudgetLimits(requests=5)))


def _gate(url: str) -> DatabaseBudgets:
    return DatabaseBudgets(create_engine(url), CharEstimateCounter(), hold_seconds=60)


async def test_a_call_without_any_budget_never_touches_the_database() -> None:
    gate = _gate("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    key = ApiKey(id="alice", key_hash="0" * 64)
    unbudgeted = Configuration(id="chat", mode="fixed")
    assert await gate.reserve(key, unbudgeted, REQUEST, None) is None


@pytest.mark.parametrize(
    "url",
    ["postgresql+asyncpg://nobody@127.0.0.1:1/none", "sqlite+aiosqlite:////nonexistent/dir/x.db"],
)
async def test_an_unreachable_budget_database_refuses_the_call_with_503(url: str) -> None:
    gate = _gate(url)
    with pytest.raises(BudgetUnavailable) as caught:
        await gate.reserve(None, BUDGETED, REQUEST, None)
    assert caught.value.http_status == 503 and caught.value.code == "budget_unavailable"


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
