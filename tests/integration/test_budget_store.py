"""Budget holds in the database on SQLite, PostgreSQL and MariaDB: exact under a burst.

PostgreSQL and MariaDB run when GATEWAY_TEST_POSTGRES_URL / GATEWAY_TEST_MARIADB_URL
are set (each test module gets a scratch database of its own).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets.figures import Amounts
from gateway.budgets.store import BudgetStore, Hold, Refused
from gateway.budgets.windows import BudgetLine, budget_lines
from gateway.db.budget_tables import budget_reservations
from gateway.domain.model import BudgetLimits, BudgetSpec, Configuration, ConfigurationMode
from gateway.domain.settings import ApiKey
from tests.unit.db.scratch import database_url, engine

__all__ = ["database_url", "engine"]

NOW = datetime.now(UTC)
LATER = NOW + timedelta(minutes=30)
ONE = Amounts(1, 0, Decimal(0))


def _lines(key: BudgetLimits | None = None, config: BudgetLimits | None = None) -> list[BudgetLine]:
    api_key = ApiKey(id="alice", key_hash="0" * 64, budget=BudgetSpec(daily=key) if key else None)
    configuration = Configuration(
        id="chat", mode=ConfigurationMode.FIXED, budget=BudgetSpec(daily=config) if config else None
    )
    return list(budget_lines(api_key, configuration, NOW))


async def _burst(store: BudgetStore, lines: list[BudgetLine], held: Amounts, n: int) -> list[Hold]:
    async def one() -> Hold | None:
        try:
            return await store.reserve(lines, held, LATER)
        except Refused:
            return None

    results = await asyncio.gather(*(one() for _ in range(n)))
    return [hold for hold in results if hold is not None]


async def _reservations(engine: AsyncEngine) -> int:
    """Holds in flight (each has one row per budget line)."""
    query = select(func.count(func.distinct(budget_reservations.c.reservation_id)))
    async with engine.connect() as connection:
        return int((await connection.execute(query)).scalar_one())


async def test_a_burst_of_120_holds_against_50_requests_admits_exactly_50(
    engine: AsyncEngine,
) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=50))
    admitted = await _burst(store, lines, ONE, 120)
    assert len(admitted) == 50
    used = await store.used(lines[0].key)
    assert used is not None and used.requests == 50
    assert await _reservations(engine) == 50


async def test_a_cost_burst_never_holds_past_the_limit(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    lines = _lines(config=BudgetLimits(cost=Decimal("0.01")))
    admitted = await _burst(store, lines, Amounts(1, 0, Decimal("0.003")), 20)
    assert len(admitted) == 3
    used = await store.used(lines[0].key)
    assert used is not None and used.cost == Decimal("0.009")


async def test_a_refusal_by_any_budget_leaves_none_held(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=10), config=BudgetLimits(requests=1))
    await store.reserve(lines, ONE, LATER)
    try:
        await store.reserve(lines, ONE, LATER)
        raise AssertionError("the configuration's budget should have refused")
    except Refused as refused:
        assert refused.line.describe() == "configuration 'chat' daily"
        assert refused.used is not None and refused.used.requests == 1
    key_line = next(line for line in lines if line.key.scope == "key")
    used = await store.used(key_line.key)
    assert used is not None and used.requests == 1  # the refused call holds nothing here
    assert await _reservations(engine) == 1


async def test_settle_replaces_the_hold_by_the_actual_figures(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(tokens=1000))
    hold = await store.reserve(lines, Amounts(1, 600, Decimal("0.5")), LATER)
    await store.settle(hold, Amounts(1, 40, Decimal("0.01")))
    assert await store.used(lines[0].key) == Amounts(1, 40, Decimal("0.01"))
    assert await _reservations(engine) == 0
    await store.reserve(lines, Amounts(1, 900, Decimal(0)), LATER)  # room again


async def test_expired_holds_are_released_and_a_late_settle_adds_its_actual(
    engine: AsyncEngine,
) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=1))
    dead = await store.reserve(lines, Amounts(1, 100, Decimal("0.2")), NOW - timedelta(seconds=1))
    assert await store.release_expired(NOW) == 1
    assert await store.used(lines[0].key) == Amounts(0, 0, Decimal(0))
    assert await store.release_expired(NOW) == 0
    await store.settle(dead, Amounts(1, 30, Decimal("0.05")))  # the call outlived its hold
    assert await store.used(lines[0].key) == Amounts(1, 30, Decimal("0.05"))


async def test_holds_that_have_not_expired_are_left_alone(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    await store.reserve(_lines(key=BudgetLimits(requests=5)), ONE, LATER)
    assert await store.release_expired(NOW) == 0
    assert await _reservations(engine) == 1


async def _expiries(engine: AsyncEngine) -> dict[str, datetime]:
    from gateway.db.budget_tables import budget_reservations as r

    async with engine.connect() as connection:
        found = await connection.execute(select(r.c.reservation_id, r.c.expires_at))
        return {row[0]: row[1] for row in found}


async def test_renewing_live_holds_pushes_their_expiry_past_the_sweep(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=2), config=BudgetLimits(requests=5))
    soon = NOW + timedelta(seconds=1)
    live = await store.reserve(lines, ONE, soon)
    dead = await store.reserve(lines, ONE, soon)
    assert await store.renew([live.reservation_id, "x" * 32], LATER) == 2  # one row per line
    expiries = await _expiries(engine)
    assert expiries[live.reservation_id] == LATER
    assert expiries[dead.reservation_id] == soon
    assert await store.release_expired(NOW + timedelta(seconds=2)) == 1
    assert await _reservations(engine) == 1
    used = await store.used(lines[0].key)
    assert used is not None and used.requests == 1  # the live call's hold stayed


async def test_a_charge_after_an_outage_lands_once_even_when_retried(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=10), config=BudgetLimits(cost=Decimal(1)))
    owed = {line.key: Amounts(3, 120, Decimal("0.0123456789")) for line in lines}
    assert await store.charge_owed("b" * 32, owed, LATER) is True
    # The commit's answer was lost: the retry under the same id finds its marker.
    assert await store.charge_owed("b" * 32, owed, LATER) is False
    for line in lines:
        assert await store.used(line.key) == Amounts(3, 120, Decimal("0.0123456789"))
    await store.forget_marker("b" * 32)
    assert await _reservations(engine) == 0


async def test_an_abandoned_charge_marker_is_swept_without_touching_counters(
    engine: AsyncEngine,
) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=10))
    await store.charge_owed("m" * 32, {lines[0].key: ONE}, NOW - timedelta(seconds=1))
    assert await store.release_expired(NOW) == 1
    assert await store.used(lines[0].key) == ONE


async def test_what_a_process_still_owes_joins_the_admission_condition(
    engine: AsyncEngine,
) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=3))
    owed = {lines[0].key: Amounts(2, 0, Decimal(0))}
    await store.reserve(lines, ONE, LATER, owed)  # 0 used + 2 owed + 1 fits 3
    try:
        await store.reserve(lines, ONE, LATER, owed)
        raise AssertionError("1 used + 2 owed + 1 should not fit 3")
    except Refused as refused:
        assert refused.used is not None and refused.used.requests == 3
    used = await store.used(lines[0].key)
    assert used is not None and used.requests == 1  # owed is counted, not charged


async def test_a_charge_without_a_hold_is_refused_past_the_limit(engine: AsyncEngine) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=2))
    await store.charge(lines, ONE)
    await store.charge(lines, ONE)
    try:
        await store.charge(lines, ONE)
        raise AssertionError("the third request should not fit 2")
    except Refused:
        pass
    used = await store.used(lines[0].key)
    assert used is not None and used.requests == 2
    assert await _reservations(engine) == 0  # nothing to settle later


async def test_a_settlement_retried_after_an_uncertain_commit_charges_nothing_twice(
    engine: AsyncEngine,
) -> None:
    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(tokens=1000))
    hold = await store.reserve(lines, Amounts(1, 600, Decimal(0)), LATER)
    await store.settle(hold, Amounts(1, 40, Decimal(0)))  # landed, but its answer was lost
    await store.settle(hold, Amounts(1, 40, Decimal(0)), if_gone="skip")
    assert await store.used(lines[0].key) == Amounts(1, 40, Decimal(0))


async def test_an_overflowing_amount_is_a_statement_error_not_an_outage(
    engine: AsyncEngine,
) -> None:
    from gateway.db.failures import is_connection_failure

    store = BudgetStore(engine)
    lines = _lines(key=BudgetLimits(requests=10))
    try:
        await store.reserve(lines, Amounts(1, 10**19, Decimal(0)), LATER)
    except Exception as error:
        assert not is_connection_failure(error)
    else:
        raise AssertionError("10**19 tokens fit no BIGINT")
    assert await _reservations(engine) == 0
