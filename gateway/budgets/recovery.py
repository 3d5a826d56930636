"""Charging what a database outage left in memory, once the database is back.

Two kinds of debt wait here: what calls admitted unchecked owe their counters
(the ledger), and the settlements of holds that could not reach the database.
A background task charges both, retrying with backoff while the database is
still down. If the process dies first, what it still owed is lost, and the
holds of its deferred settlements are released by the sweep when they expire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gateway.budgets.figures import Amounts
from gateway.budgets.ledger import OutageLedger
from gateway.budgets.store import BudgetStore, Hold, SettleUncertain
from gateway.db.engine import describe_error
from gateway.db.failures import is_connection_failure
from gateway.tasks import wait_event

log = logging.getLogger(__name__)

BATCH_COUNTERS = 100
BACKOFF_FIRST_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 30.0
# A charge's marker must outlive every retry of that charge; the sweep removes it afterwards.
MARKER_DAYS = 7


@dataclass(slots=True)
class DeferredSettle:
    hold: Hold
    actual: Amounts
    if_gone: Literal["add", "skip"]  # "skip": an uncertain commit may have settled it


class OutageRecovery:
    def __init__(
        self,
        store: BudgetStore,
        clock: Callable[[], datetime],
        *,
        backoff_first_seconds: float = BACKOFF_FIRST_SECONDS,
        backoff_max_seconds: float = BACKOFF_MAX_SECONDS,
    ) -> None:
        self.store = store
        self.ledger = OutageLedger()
        self.deferred: dict[str, DeferredSettle] = {}  # by reservation id
        self._clock = clock
        self._first = backoff_first_seconds
        self._max = backoff_max_seconds
        self._wake = asyncio.Event()
        self._reachable = asyncio.Event()  # cuts a backoff short: the database answered
        self.lost_batches = 0  # given up on a database error that is not an outage

    @property
    def pending_calls(self) -> int:
        return self.ledger.pending_calls + len(self.deferred)

    @property
    def idle(self) -> bool:
        return self.ledger.is_empty and not self.deferred

    def wake(self) -> None:
        self._wake.set()

    def reachable(self) -> None:
        """A budget statement just succeeded: what waits for the database need not wait on."""
        if not self.idle:
            self._reachable.set()

    def defer(self, hold: Hold, actual: Amounts, *, uncertain: bool) -> None:
        self.deferred[hold.reservation_id] = DeferredSettle(
            hold, actual, "skip" if uncertain else "add"
        )
        self.wake()

    async def run(self) -> None:
        """Wait for debt, charge it; while the database is down, retry with backoff."""
        delay = self._first
        while True:
            await self._wake.wait()
            self._wake.clear()
            self._reachable.clear()  # a success from here on ends the backoff below
            try:
                await self.charge_all()
            except Exception as error:  # the database is still down (anything else is dropped)
                log.warning(
                    "budget charges from an outage wait %.1fs more: %s",
                    delay,
                    describe_error(error),
                )
                await wait_event(self._reachable, delay)
                delay = min(delay * 2, self._max)
                self.wake()
                continue
            delay = self._first

    async def charge_all(self) -> None:
        """Deferred settlements first (their holds block others), then what is owed."""
        for reservation_id, deferred in list(self.deferred.items()):
            await self._settle(reservation_id, deferred)
        while (batch := self.ledger.next_batch(BATCH_COUNTERS)) is not None:
            expires = self._clock() + timedelta(days=MARKER_DAYS)
            try:
                fresh = await self.store.charge_owed(batch.id, batch.amounts, expires)
            except Exception as error:
                if is_connection_failure(error):
                    raise
                self.lost_batches += 1
                log.error(
                    "budget charge of %d counter(s) from an outage dropped: %s",
                    len(batch.amounts),
                    describe_error(error),
                )
                fresh = False
            self.ledger.charged(batch)
            if fresh:
                log.warning("charged %d budget counter(s) after an outage", len(batch.amounts))
                with contextlib.suppress(Exception):  # the sweep removes a marker left behind
                    await self.store.forget_marker(batch.id)

    async def _settle(self, reservation_id: str, deferred: DeferredSettle) -> None:
        try:
            await self.store.settle(deferred.hold, deferred.actual, if_gone=deferred.if_gone)
        except SettleUncertain:
            deferred.if_gone = "skip"
            raise
        except Exception as error:
            if is_connection_failure(error):
                raise
            log.error("deferred budget settlement dropped: %s", describe_error(error))
        del self.deferred[reservation_id]
