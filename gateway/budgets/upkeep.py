"""The budget gate's background work: renew live holds, sweep dead ones, charge outages.

A hold expires (``hold_seconds`` after it was taken or last renewed) so that the
hold of a call whose process died is released by the sweep instead of leaking.
A call that lives longer (a stream has no deadline once it started) keeps its
hold because its process renews it, well before expiry, in one statement per
batch of holds; a process that dies stops renewing, and the sweep cleans up.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta

from gateway.budgets.recovery import OutageRecovery
from gateway.budgets.store import BudgetStore, Hold
from gateway.db.engine import describe_error
from gateway.tasks import Supervisor, cancel_and_wait

log = logging.getLogger(__name__)

SWEEP_INTERVAL_SECONDS = 30.0
# Renewals per hold lifetime: three may fail in a row before a live hold can expire.
RENEWALS_PER_HOLD = 4
# Counters of windows this old are forgotten (the longest window is a month).
KEEP_WINDOWS_DAYS = 62


class Upkeep:
    def __init__(
        self,
        store: BudgetStore,
        recovery: OutageRecovery,
        live: Mapping[str, Hold],
        clock: Callable[[], datetime],
        *,
        hold_seconds: float,
        sweep_interval_seconds: float | None = None,
        renew_interval_seconds: float | None = None,
        tasks: Supervisor | None = None,
    ) -> None:
        self._tasks_of = tasks or Supervisor()
        self._store = store
        self._recovery = recovery
        self._live = live
        self._clock = clock
        self._hold = timedelta(seconds=hold_seconds)
        # A short hold (tests) is swept more often than every 30 s.
        self._sweep_every = sweep_interval_seconds or min(SWEEP_INTERVAL_SECONDS, hold_seconds / 2)
        self._renew_every = renew_interval_seconds or hold_seconds / RENEWALS_PER_HOLD
        self._tasks: list[asyncio.Task[None]] = []

    async def sweep(self) -> int:
        """Release expired holds and forget old windows; returns holds released."""
        now = self._clock()
        released = await self._store.release_expired(now)
        await self._store.purge_windows((now - timedelta(days=KEEP_WINDOWS_DAYS)).date())
        if released:
            log.warning("released %d budget hold(s) of calls that never finished", released)
        return released

    async def renew(self) -> int:
        """Extend the holds of this process's running calls (and of deferred settlements)."""
        ids = [*self._live, *self._recovery.deferred]
        if not ids:
            return 0
        return await self._store.renew(ids, self._clock() + self._hold)

    async def start(self) -> None:
        if self._tasks:
            return
        loops: dict[str, Callable[[], Awaitable[None]]] = {
            "budget-sweep": functools.partial(_every, self._sweep_every, self.sweep, "sweep"),
            "budget-renew": functools.partial(_every, self._renew_every, self.renew, "renewal"),
            "budget-recovery": self._recovery.run,
        }
        self._tasks = [self._tasks_of.spawn(name, loop) for name, loop in loops.items()]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)


async def _every(seconds: float, work: Callable[[], Awaitable[int]], what: str) -> None:
    while True:
        await asyncio.sleep(seconds)
        try:
            await work()
        except Exception as error:  # the next round tries again
            log.warning("budget %s failed: %s", what, describe_error(error))
