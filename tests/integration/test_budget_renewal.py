"""Holds of running calls are renewed, so a long stream keeps its budget; a dead process's are not.

Short holds (about a second) and sweeps make the expiry happen within the test.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

import httpx
import msgspec
import pytest
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets import DatabaseBudgets
from gateway.budgets.gate import Ticket
from gateway.db.budget_tables import budget_reservations
from gateway.domain.model import (
    BudgetLimits,
    BudgetSpec,
    Configuration,
    ConfigurationMode,
    Endpoint,
)
from gateway.inbound import parse_inbound
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.tokens import CharEstimateCounter
from tests.integration.budget_support import (
    HTTP_BACKENDS,
    budget_yaml,
    chat_body,
    counter,
    database,
    holds,
    running,
)
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY
from tests.unit.db.scratch import database_url, engine

__all__ = ["database_url", "engine"]

HOLD_SECONDS = 1.5
REQUEST = parse_inbound(
    Endpoint.CHAT, msgspec.json.encode({"model": "chat", "messages": [{"role": "user"}]})
)
ONE_A_DAY = Configuration(
    id="chat", mode=ConfigurationMode.FIXED, budget=BudgetSpec(daily=BudgetLimits(requests=1))
)


@pytest.mark.parametrize("backend", HTTP_BACKENDS)
def test_a_stream_that_outlives_its_hold_keeps_its_budget_while_it_runs(
    backend: str, upstream: FakeUpstream, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("gateway.runtime.hold_seconds_for", lambda _: HOLD_SECONDS)
    pieces = [f"w{i} " for i in range(16)]
    upstream.behave("small-model", stream_pieces=pieces, chunk_delay_ms=300)  # ~5 s
    alice = "budget: {daily: {requests: 1}}"
    with (
        database(backend, tmp_path) as url,
        running(budget_yaml(upstream.url, url, alice=alice)) as gateway,
    ):
        streamed: list[int] = []

        def stream() -> None:
            with httpx.stream(
                "POST",
                f"{gateway.url}/v1/chat/completions",
                json=chat_body(stream=True),
                headers={"authorization": f"Bearer {TEST_KEY}"},
                timeout=30,
            ) as response:
                response.read()
                streamed.append(response.status_code)

        reader = threading.Thread(target=stream)
        reader.start()
        time.sleep(2 * HOLD_SECONDS + 0.5)  # past the first expiry and several sweeps
        assert reader.is_alive()
        second = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            json=chat_body(),
            headers={"authorization": f"Bearer {TEST_KEY}"},
            timeout=20,
        )
        reader.join(timeout=30)
        assert second.status_code == 429, "the running stream's hold was released"
        assert streamed == [200]
        assert upstream.calls["small-model"] == 1
        used = counter(gateway, "key", "alice")
        assert used is not None and used["requests"] == 1
        assert holds(gateway) == 0


async def _held(engine: AsyncEngine) -> int:
    query = select(func.count()).select_from(budget_reservations)
    async with engine.connect() as connection:
        return int((await connection.execute(query)).scalar_one())


async def _until(condition: Callable[[], Awaitable[bool]], seconds: float) -> None:
    for _ in range(int(seconds / 0.05)):
        if await condition():
            return
        await asyncio.sleep(0.05)


async def test_a_process_that_stops_renewing_leaves_its_hold_to_the_sweep(
    engine: AsyncEngine,
) -> None:
    tokens = CharEstimateCounter()
    caller = DatabaseBudgets(engine, tokens, hold_seconds=HOLD_SECONDS)
    sweeper = DatabaseBudgets(engine, tokens, hold_seconds=60, sweep_interval_seconds=0.1)
    await caller.start()
    await sweeper.start()
    try:
        reservation = await caller.reserve(None, ONE_A_DAY, REQUEST, list)
        assert reservation is not None
        await asyncio.sleep(2 * HOLD_SECONDS)
        assert await _held(engine) == 1  # renewed while the call runs
        await caller.stop()  # the process dies: no settle, no renewal

        async def released() -> bool:
            return await _held(engine) == 0

        await _until(released, 5 * HOLD_SECONDS)
        assert await _held(engine) == 0
        ticket = reservation.token
        assert isinstance(ticket, Ticket)
        used = await sweeper.store.used(ticket.keys[0])
        assert used is not None and used.requests == 0  # the sweep gave the request back
    finally:
        await caller.stop()
        await sweeper.stop()


async def test_a_settled_call_is_no_longer_renewed(engine: AsyncEngine) -> None:
    gate = DatabaseBudgets(engine, CharEstimateCounter(), hold_seconds=HOLD_SECONDS)
    reservation = await gate.reserve(None, ONE_A_DAY, REQUEST, list)
    assert reservation is not None and len(gate.live) == 1
    record = TelemetryRecord(
        created_at=datetime.now(UTC),
        request_id="c",
        operation="chat",
        configuration="chat",
        success=False,
        http_status=502,
        latency_ms=1.0,
    )
    await gate.settle(reservation, record)
    assert gate.live == {}
    assert await gate.upkeep.renew() == 0
