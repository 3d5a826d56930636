"""A saturated budget database is waited for, then refused: never admitted unchecked."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from sqlalchemy import event
from sqlalchemy.exc import TimeoutError as PoolTimeout
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets import DatabaseBudgets
from gateway.budgets.figures import ONE_REQUEST
from gateway.budgets.gate import Ticket
from gateway.budgets.store import Hold
from gateway.db.engine import create_engine
from gateway.db.failures import is_busy, is_connection_failure
from gateway.db.migrate import upgrade
from gateway.domain.errors import BudgetBusy
from gateway.domain.model import (
    BudgetLimits,
    BudgetSpec,
    Configuration,
    ConfigurationMode,
    Endpoint,
    Model,
)
from gateway.inbound import parse_inbound
from gateway.usage.tokens import CharEstimateCounter

REQUEST = parse_inbound(
    Endpoint.CHAT, msgspec.json.encode({"model": "chat", "messages": [{"role": "user"}]})
)
BUDGETED = Configuration(
    id="chat", mode=ConfigurationMode.FIXED, budget=BudgetSpec(daily=BudgetLimits(requests=5))
)
SATURATED = PoolTimeout("QueuePool limit of size 10 overflow 10 reached, timed out")


def _no_models() -> list[Model]:
    return []


@pytest.fixture
async def engine() -> AsyncIterator[AsyncEngine]:
    made = create_engine("postgresql+asyncpg://nobody@127.0.0.1:1/none")
    yield made
    await made.dispose()


def _gate(engine: AsyncEngine, on_outage: str = "admit", wait: float = 0.3) -> DatabaseBudgets:
    return DatabaseBudgets(
        engine,
        CharEstimateCounter(),
        hold_seconds=60,
        on_outage=on_outage,
        busy_wait_seconds=wait,
    )


def test_pool_timeouts_and_sqlite_lock_timeouts_are_busy_and_still_outages_elsewhere() -> None:
    locked = sqlite3.OperationalError("database is locked")
    locked.sqlite_errorcode = 5
    from sqlalchemy.exc import OperationalError

    wrapped = OperationalError("UPDATE", {}, locked)
    assert is_busy(SATURATED) and is_busy(wrapped)
    assert is_connection_failure(SATURATED) and is_connection_failure(wrapped)
    assert not is_busy(ConnectionRefusedError(111, "Connect call failed"))
    cannot_open = sqlite3.OperationalError("unable to open database file")
    cannot_open.sqlite_errorcode = 14
    assert not is_busy(OperationalError("SELECT 1", {}, cannot_open))


async def test_a_check_busy_for_a_while_is_tried_again_and_holds_the_call(
    engine: AsyncEngine,
) -> None:
    gate = _gate(engine, wait=5.0)
    tries: list[int] = []

    async def reserve(lines: Any, held: Any, expires: Any, owed: Any) -> Hold:
        tries.append(1)
        if len(tries) < 3:
            raise SATURATED
        return Hold("r1", tuple(line.key for line in lines), held)

    gate.store.reserve = reserve  # type: ignore[method-assign]
    reservation = await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert reservation is not None
    ticket = reservation.token
    assert isinstance(ticket, Ticket) and ticket.hold is not None
    assert len(tries) == 3
    assert gate.unchecked == 0 and gate.busy_refusals == 0


@pytest.mark.parametrize("on_outage", ["admit", "refuse"])
async def test_a_check_that_stays_busy_is_refused_503_and_nothing_is_admitted_unchecked(
    engine: AsyncEngine, on_outage: str
) -> None:
    gate = _gate(engine, on_outage=on_outage)
    tries: list[int] = []

    async def saturated(*_args: Any) -> None:
        tries.append(1)
        raise SATURATED

    gate.store.reserve = saturated  # type: ignore[method-assign]
    gate.store.charge = saturated  # type: ignore[method-assign]
    with pytest.raises(BudgetBusy) as caught:
        await gate.reserve(None, BUDGETED, REQUEST, _no_models)
    assert caught.value.http_status == 503
    assert caught.value.envelope()["error"]["code"] == "budget_busy"
    assert caught.value.headers() == {"retry-after": "1"}
    assert len(tries) > 1  # waited for, not refused at the first timeout
    with pytest.raises(BudgetBusy):
        await gate.count_hit(None, BUDGETED)  # a cached answer's request count alike
    assert gate.unchecked == 0 and gate.recovery.ledger.is_empty
    assert gate.busy_refusals == 2


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    path = tmp_path / "budgets.db"
    upgrade(f"sqlite+aiosqlite:///{path}")
    yield f"sqlite+aiosqlite:///{path}"


async def test_a_real_sqlite_write_lock_is_waited_for_then_refused_then_admitted(
    sqlite_url: str,
) -> None:
    engine = create_engine(sqlite_url)

    def short_busy_timeout(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.cursor().execute("PRAGMA busy_timeout=50")

    event.listen(engine.sync_engine, "connect", short_busy_timeout)
    gate = _gate(engine, wait=0.3)
    holder = sqlite3.connect(sqlite_url.removeprefix("sqlite+aiosqlite:///"))
    try:
        holder.execute("BEGIN IMMEDIATE")  # another writer keeps the file's write lock
        with pytest.raises(BudgetBusy):
            await gate.reserve(None, BUDGETED, REQUEST, _no_models)
        assert gate.unchecked == 0
        holder.rollback()
        reservation = await gate.reserve(None, BUDGETED, REQUEST, _no_models)
        assert reservation is not None
        ticket = reservation.token
        assert isinstance(ticket, Ticket) and ticket.hold is not None
        assert ticket.held == ONE_REQUEST
    finally:
        holder.close()
        await engine.dispose()
