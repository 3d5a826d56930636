"""The pipeline's BudgetGate on the database, and the sweeper of holds that died."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets.figures import ONE_REQUEST, actual_amounts, refusal, worst_case
from gateway.budgets.store import BudgetStore, Hold, Refused
from gateway.budgets.windows import budget_lines, measures_tokens
from gateway.db.engine import describe_error
from gateway.domain.errors import GatewayError
from gateway.domain.model import Configuration, Model
from gateway.domain.settings import ApiKey
from gateway.hooks import Reservation
from gateway.inbound import InboundRequest
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)

SWEEP_INTERVAL_SECONDS = 30.0
# Counters of windows this old are forgotten (the longest window is a month).
KEEP_WINDOWS_DAYS = 62
# asyncpg raises OSError (not a SQLAlchemy error) when it cannot connect.
_DATABASE_DOWN = (SQLAlchemyError, OSError)


def hold_seconds_for(request_timeout_seconds: float) -> float:
    """A hold outlives any call that can still settle it: twice the call bound, plus a minute."""
    return 2 * request_timeout_seconds + 60.0


def _utc_now() -> datetime:
    return datetime.now(UTC)


class BudgetUnavailable(GatewayError):
    """The budget could not be checked (database down): refused rather than unbounded."""

    status = 503
    code = "budget_unavailable"


class DatabaseBudgets:
    def __init__(
        self,
        engine: AsyncEngine,
        counter: TokenCounter,
        *,
        hold_seconds: float,
        sweep_interval_seconds: float = SWEEP_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = _utc_now,
    ) -> None:
        self.store = BudgetStore(engine)
        self._counter = counter
        self._hold = timedelta(seconds=hold_seconds)
        self._interval = sweep_interval_seconds
        self._clock = clock
        self._task: asyncio.Task[None] | None = None

    async def reserve(
        self,
        key: ApiKey | None,
        configuration: Configuration,
        request: InboundRequest,
        model: Model | None,
    ) -> Reservation | None:
        now = self._clock()
        lines = budget_lines(key, configuration, now)
        if not lines:
            return None  # no budget applies: no database round trip
        held = worst_case(request, model, self._counter) if measures_tokens(lines) else ONE_REQUEST
        try:
            hold = await self.store.reserve(lines, held, now + self._hold)
        except Refused as refused:
            raise refusal(refused.line, held, refused.used, now) from None
        except _DATABASE_DOWN as error:
            log.error("budget reservation failed: %s", describe_error(error))
            raise BudgetUnavailable("The budget could not be checked; try again.") from None
        return Reservation(hold)

    async def settle(self, reservation: Reservation, record: TelemetryRecord) -> None:
        hold = reservation.token
        if not isinstance(hold, Hold):
            return
        try:
            await self.store.settle(hold, actual_amounts(record))
        except _DATABASE_DOWN as error:
            # The hold stays until it expires and the sweeper releases it.
            log.error("budget settlement failed: %s", describe_error(error))

    async def sweep(self) -> int:
        """Release expired holds and forget old windows; returns holds released."""
        now = self._clock()
        released = await self.store.release_expired(now)
        await self.store.purge_windows((now - timedelta(days=KEEP_WINDOWS_DAYS)).date())
        if released:
            log.warning("released %d budget hold(s) of calls that never finished", released)
        return released

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._loop(), name="budget-sweeper")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._interval)
            try:
                await self.sweep()
            except _DATABASE_DOWN as error:
                log.warning("budget sweep failed: %s", describe_error(error))
