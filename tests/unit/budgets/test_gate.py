"""The gate without a reachable database: what an outage admits, refuses and keeps in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import msgspec
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets import DatabaseBudgets
from gateway.budgets.figures import ONE_REQUEST, Amounts
from gateway.budgets.gate import Ticket
from gateway.budgets.store import Hold
from gateway.db.engine import create_engine
from gateway.domain.errors import BudgetExceeded, BudgetUnavailable
from gateway.domain.model import (
    BudgetLimits,
    BudgetSpec,
    Configuration,
    ConfigurationMode,
    Endpoint,
    Model,
)
from gateway.domain.settings import ApiKey
from gateway.hooks import Reservation
from gateway.inbound import parse_inbound
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.tokens import CharEstimateCounter, TiktokenCounter
from tests.support.counters import WatchedCounter

REQUEST = parse_inbound(
    Endpoint.CHAT, msgspec.json.encode({"model": "chat", "messages": [{"role": "user"}]})
)
BUDGETED = Configuration(
    id="chat", mode=ConfigurationMode.FIXED, budget=BudgetSpec(daily=BudgetLimits(requests=5))
)
DEAD_POSTGRES = "postgresql+asyncpg://nobody@127.0.0.1:1/none"
DEAD_URLS = [
    DEAD_POSTGRES,
    "mysql+aiomysql://nobody@127.0.0.1:1/none",
    "sqlite+aiosqlite:////nonexistent/dir/x.db",
]


def _no_models() -> list[Model]:
    return []


_ENGINES: list[AsyncEngine] = []


@pytest.fixture(autouse=True)
async def _dispose_engines() -> AsyncIterator[None]:
    yield
    while _ENGINES:
        await _ENGINES.pop().dispose()


def _gate(url: str = DEAD_POSTGRES, on_outage: str = "admit") -> DatabaseBudgets:
    engine = create_engine(url)
    _ENGINES.append(engine)
    return DatabaseBudgets(engine, CharEstimateCounter(), hold_seconds=60, on_outage=on_outage)


def _record(**fields: Any) -> TelemetryRecord:
    base: dict[str, Any] = {"success": True, "http_status": 200, "latency_ms": 1.0}
    return TelemetryRecord(
        created_at=datetime.now(UTC),
        request_id="c",
        operation="chat",
        configuration="chat",
        **{**base, **fields},
    )


def _owed(gate: DatabaseBudgets) -> Amounts:
    (key,) = [line.key for line in _lines()]
    return gate.recovery.ledger.pending(key)


def _lines() -> list[Any]:
    from gateway.budgets.windows import budget_lines

    return list(budget_lines(None, BUDGETED, datetime.now(UTC)))


async def test_a_call_without_any_budget_never_touches_the_database() -> None:
    gate = _gate()
    key = ApiKey(id="alice", key_hash="0" * 64)
    unbudgeted = Configuration(id="chat", mode=ConfigurationMode.FIXED)
    assert await gate.reserve(key, unbudgeted, REQUEST, _no_models) is None
    await gate.count_hit(key, unbudgeted)
    assert gate.unchecked == 0


@pytest.mark.parametrize("url", DEAD_URLS)
async def test_an_unreachable_database_admits_the_call_and_keeps_its_worst_case_owed(
    url: str,
) -> None:
    gate = _gate(url)
    reservation = await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert reservation is not None
    ticket = reservation.token
    assert isinstance(ticket, Ticket) and ticket.hold is None
    assert gate.unchecked == 1
    assert _owed(gate) == ONE_REQUEST
    assert gate.recovery.pending_calls == 1


@pytest.mark.parametrize("url", DEAD_URLS)
async def test_under_refuse_an_unreachable_database_is_a_503(url: str) -> None:
    gate = _gate(url, on_outage="refuse")
    with pytest.raises(BudgetUnavailable) as caught:
        await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert caught.value.http_status == 503
    assert caught.value.envelope()["error"]["code"] == "budget_unavailable"
    assert caught.value.envelope()["error"]["type"] == "api_error"
    with pytest.raises(BudgetUnavailable):
        await gate.count_hit(None, BUDGETED)
    assert gate.unchecked == 0 and gate.recovery.ledger.is_empty


async def test_what_an_outage_admitted_refuses_calls_past_the_limit_on_its_own() -> None:
    gate = _gate()
    for _ in range(5):
        assert await gate.reserve(None, BUDGETED, REQUEST, _no_models) is not None
    with pytest.raises(BudgetExceeded) as caught:
        await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert "configuration 'chat' daily requests budget of 5 requests (5 used or held)" in (
        caught.value.message
    )
    with pytest.raises(BudgetExceeded):
        await gate.count_hit(None, BUDGETED)  # a cached answer is a request too
    assert gate.unchecked == 5


async def test_an_outage_refusal_of_a_prompt_too_large_to_count_says_it_was_bounded() -> None:
    gate = _gate()
    metered = Configuration(
        id="chat",
        mode=ConfigurationMode.FIXED,
        budget=BudgetSpec(daily=BudgetLimits(tokens=1_000_000)),
    )
    text = "word " * 300_000  # 1.5 MB: past what is counted exactly
    huge = parse_inbound(
        Endpoint.CHAT,
        msgspec.json.encode({"model": "chat", "messages": [{"role": "user", "content": text}]}),
    )
    assert await gate.reserve(None, metered, huge, _no_models) is not None  # admitted unchecked
    with pytest.raises(BudgetExceeded) as caught:
        await gate.reserve(None, metered, huge, _no_models)  # its own remembered use refuses
    assert "too large to count exactly" in caught.value.message


async def test_an_unchecked_call_that_ends_owes_its_actual_figures() -> None:
    gate = _gate()
    reservation = await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert reservation is not None
    record = _record(
        served_model="small",
        served_configuration="chat",
        actual_input_tokens=10,
        actual_output_tokens=5,
        actual_cost=Decimal("0.00002"),
    )
    await gate.settle(reservation, record)
    assert _owed(gate) == Amounts(1, 15, Decimal("0.00002"))
    assert gate.recovery.ledger.open_calls == 0
    failed = await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert failed is not None
    await gate.settle(failed, _record(success=False, http_status=502))
    assert _owed(gate) == Amounts(1, 15, Decimal("0.00002"))  # nothing answered: released


async def test_an_unchecked_fallback_hold_is_released_when_another_configuration_served() -> None:
    gate = _gate()
    reservation = await gate.reserve(None, BUDGETED, REQUEST, _no_models, fallback=True)
    assert reservation is not None
    record = _record(served_model="other", served_configuration="elsewhere", actual_cost=None)
    await gate.settle(reservation, record)
    assert gate.recovery.ledger.is_empty


async def test_a_settlement_that_cannot_reach_the_database_is_kept_for_later() -> None:
    gate = _gate()
    hold = Hold("r" * 32, (), ONE_REQUEST)
    gate.live[hold.reservation_id] = hold
    await gate.settle(Reservation(Ticket((), ONE_REQUEST, hold)), _record(served_model="m"))
    assert list(gate.recovery.deferred) == ["r" * 32]
    assert gate.recovery.deferred["r" * 32].if_gone == "add"
    assert gate.live == {}  # renewed as a deferred settlement now
    assert gate.recovery.pending_calls == 1


async def test_a_reservation_settles_once_whoever_asks_again() -> None:
    gate = _gate()
    reservation = Reservation(Ticket((), ONE_REQUEST, Hold("r" * 32, (), ONE_REQUEST)))
    await gate.settle(reservation, _record())
    assert reservation.token is None  # a second settle finds nothing to settle
    await gate.settle(reservation, _record())
    assert len(gate.recovery.deferred) == 1


async def test_the_hold_counts_the_prompt_once_per_encoding_for_every_candidate_model() -> None:
    counter = WatchedCounter(inner=TiktokenCounter())
    engine = create_engine(DEAD_POSTGRES)
    _ENGINES.append(engine)
    gate = DatabaseBudgets(engine, counter, hold_seconds=60)
    metered = Configuration(
        id="chat", mode=ConfigurationMode.FIXED, budget=BudgetSpec(daily=BudgetLimits(tokens=9))
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
