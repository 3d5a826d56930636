"""What an outage left owed is charged once the database answers again, on every database."""

from __future__ import annotations

import asyncio
from decimal import Decimal

import msgspec
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets import DatabaseBudgets
from gateway.budgets.figures import Amounts
from gateway.budgets.gate import Ticket
from gateway.domain.model import (
    BudgetLimits,
    BudgetSpec,
    Configuration,
    ConfigurationMode,
    Endpoint,
)
from gateway.inbound import parse_inbound
from gateway.usage.tokens import CharEstimateCounter
from tests.integration.budget_support import refused_connections
from tests.unit.db.scratch import database_url, engine

__all__ = ["database_url", "engine"]

REQUEST = parse_inbound(
    Endpoint.CHAT, msgspec.json.encode({"model": "chat", "messages": [{"role": "user"}]})
)
TEN_A_DAY = Configuration(
    id="chat", mode=ConfigurationMode.FIXED, budget=BudgetSpec(daily=BudgetLimits(requests=10))
)


async def test_the_first_statement_that_reaches_the_database_cuts_the_backoff_short(
    engine: AsyncEngine,
) -> None:
    gate = DatabaseBudgets(
        engine, CharEstimateCounter(), hold_seconds=60, recovery_backoff_seconds=30
    )
    await gate.start()
    try:
        with refused_connections(engine):
            await engine.dispose()
            unchecked = await gate.reserve(None, TEN_A_DAY, REQUEST, list)
            assert unchecked is not None
            await asyncio.sleep(0.3)  # the recovery tried, failed, and waits 30 s now
        ticket = unchecked.token
        assert isinstance(ticket, Ticket) and ticket.hold is None
        assert await gate.reserve(None, TEN_A_DAY, REQUEST, list) is not None  # reaches it
        for _ in range(100):
            if gate.recovery.ledger.is_empty:
                break
            await asyncio.sleep(0.05)
        assert gate.recovery.ledger.is_empty
        used = await gate.store.used(ticket.keys[0])
        assert used == Amounts(2, 0, Decimal(0))  # the owed request and the held one
    finally:
        await gate.stop()


async def test_a_process_that_stops_charges_what_an_outage_left_before_it_goes(
    engine: AsyncEngine,
) -> None:
    gate = DatabaseBudgets(engine, CharEstimateCounter(), hold_seconds=60)
    with refused_connections(engine):
        await engine.dispose()
        unchecked = await gate.reserve(None, TEN_A_DAY, REQUEST, list)
    assert unchecked is not None and not gate.recovery.ledger.is_empty
    await gate.stop()  # its background task never ran
    ticket = unchecked.token
    assert isinstance(ticket, Ticket)
    assert gate.recovery.ledger.is_empty
    assert await gate.store.used(ticket.keys[0]) == Amounts(1, 0, Decimal(0))
