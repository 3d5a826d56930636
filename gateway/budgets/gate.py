"""The pipeline's BudgetGate on the database, and the sweeper of holds that died."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets.figures import ONE_REQUEST, Amounts, actual_amounts, refusal, worst_case
from gateway.budgets.store import BudgetStore, Hold, Refused
from gateway.budgets.windows import budget_lines, measures_tokens
from gateway.db.engine import describe_error
from gateway.domain.model import Configuration, Model
from gateway.domain.settings import ApiKey
from gateway.hooks import Reservation
from gateway.inbound import InboundRequest
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.estimate import prompt_tokens
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
        self.unchecked = 0  # calls admitted without a check while the database was down

    async def reserve(
        self,
        key: ApiKey | None,
        configuration: Configuration,
        request: InboundRequest,
        models: Callable[[], Sequence[Model]],
    ) -> Reservation | None:
        now = self._clock()
        lines = budget_lines(key, configuration, now)
        if not lines:
            return None  # no budget applies: no database round trip
        held, bounded = ONE_REQUEST, False
        if measures_tokens(lines):
            held, bounded = await self._worst_case(request, models())
        try:
            hold = await self.store.reserve(lines, held, now + self._hold)
        except Refused as refused:
            raise refusal(
                refused.line, held, refused.used, now, prompt_upper_bound=bounded
            ) from None
        except _DATABASE_DOWN as error:
            # A database outage never fails a call: admitted unchecked, logged and counted.
            self.unchecked += 1
            log.error("budget not checked, call admitted: %s", describe_error(error))
            return None
        return Reservation(hold)

    async def _worst_case(
        self, request: InboundRequest, models: Sequence[Model]
    ) -> tuple[Amounts, bool]:
        """The dearest of the models the call may end on (primary and fallbacks), and
        whether its prompt count is an upper bound. The prompt is counted once per
        encoding, off the event loop when it is large."""
        cases: list[Amounts] = []
        bounded = False
        candidates: Sequence[Model | None] = models or [None]
        for model in candidates:
            prompt = await prompt_tokens(self._counter, request, model.name if model else "")
            cases.append(worst_case(request, model, prompt.tokens))
            bounded = bounded or prompt.upper_bound
        return max(cases, key=lambda amounts: (amounts.cost, amounts.tokens)), bounded

    async def settle(self, reservation: Reservation, record: TelemetryRecord) -> None:
        hold, reservation.token = reservation.token, None  # settled once, whoever asks again
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
