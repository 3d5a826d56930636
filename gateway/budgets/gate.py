"""The pipeline's BudgetGate on the database.

Admission holds the call's worst case on every budget it is held to, in one
transaction; the end of the call replaces the hold by what it used. A fallback
configuration with a budget of its own is held when its turn comes, and is
charged only if it is what served.

Only a database that cannot be reached is an outage (``budgets.onDatabaseOutage``:
``admit`` keeps the call's figures in memory and charges them when the
database is back, ``refuse`` answers 503). A database that answers but is
saturated (pool checkout or SQLite lock timed out) is waited for, up to
``BUSY_WAIT_SECONDS``, then the call is refused (503 ``budget_busy``): admitting
calls unchecked under load is how a burst would overrun a budget. Any other
database error refuses the call: a value that breaks a statement must not pass a
budget unchecked.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.budgets.figures import (
    NOTHING,
    ONE_REQUEST,
    Amounts,
    actual_amounts,
    refusal,
    worst_case,
)
from gateway.budgets.recovery import BACKOFF_FIRST_SECONDS, OutageRecovery
from gateway.budgets.store import BudgetStore, Hold, Refused, SettleUncertain
from gateway.budgets.upkeep import Upkeep
from gateway.budgets.windows import BudgetLine, CounterKey, budget_lines, measures_tokens
from gateway.db.engine import describe_error
from gateway.db.failures import is_busy, is_connection_failure
from gateway.domain.clock import utc_now
from gateway.domain.errors import BudgetBusy, BudgetCheckFailed, BudgetUnavailable
from gateway.domain.model import Configuration, Model
from gateway.domain.settings import ApiKey
from gateway.hooks import Reservation
from gateway.inbound import InboundRequest
from gateway.tasks import Supervisor
from gateway.telemetry.records import TelemetryRecord
from gateway.usage.estimate import prompt_tokens
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)
_T = TypeVar("_T")

ADMIT = "admit"
REFUSE = "refuse"
FINAL_CHARGE_SECONDS = 5.0
# How long an admission waits for a saturated budget database, and the pauses between
# its tries (doubling, jittered by ±50 %).
BUSY_WAIT_SECONDS = 30.0
BUSY_PAUSE_FIRST_SECONDS = 0.05
BUSY_PAUSE_MAX_SECONDS = 1.0


def hold_seconds_for(request_timeout_seconds: float) -> float:
    """A hold outlives any call that can still settle it: twice the call bound, plus a minute."""
    return 2 * request_timeout_seconds + 60.0


@dataclass(slots=True)
class Ticket:
    """What one reservation holds: a hold in the database, or (outage) only in memory."""

    keys: tuple[CounterKey, ...]
    held: Amounts
    hold: Hold | None  # None: admitted unchecked, owed in the outage ledger
    served_by: str | None = None  # a fallback's hold: charged only if this configuration served


class DatabaseBudgets:
    def __init__(
        self,
        engine: AsyncEngine,
        counter: TokenCounter,
        *,
        hold_seconds: float,
        on_outage: str = ADMIT,
        sweep_interval_seconds: float | None = None,
        renew_interval_seconds: float | None = None,
        recovery_backoff_seconds: float = BACKOFF_FIRST_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        busy_wait_seconds: float = BUSY_WAIT_SECONDS,
        tasks: Supervisor | None = None,
    ) -> None:
        self.store = BudgetStore(engine)
        self.recovery = OutageRecovery(
            self.store, clock, backoff_first_seconds=recovery_backoff_seconds
        )
        self.live: dict[str, Hold] = {}  # holds of calls still running, renewed until they end
        self.upkeep = Upkeep(
            self.store,
            self.recovery,
            self.live,
            clock,
            hold_seconds=hold_seconds,
            sweep_interval_seconds=sweep_interval_seconds,
            renew_interval_seconds=renew_interval_seconds,
            tasks=tasks,
        )
        self._counter = counter
        self._hold = timedelta(seconds=hold_seconds)
        self._refuse = on_outage == REFUSE
        self._clock = clock
        self._busy_wait = busy_wait_seconds
        self.unchecked = 0  # calls admitted without a check while the database was down
        self.busy_refusals = 0  # calls refused because the database stayed saturated

    async def reserve(
        self,
        key: ApiKey | None,
        configuration: Configuration,
        request: InboundRequest,
        models: Callable[[], Sequence[Model]],
        *,
        fallback: bool = False,
    ) -> Reservation | None:
        """Hold the worst case; a fallback's hold covers its own budget (the primary's hold
        covers the key's)."""
        held_key = None if fallback else key
        if configuration.budget is None and (
            held_key is None or (held_key.budget is None and held_key.team_budget is None)
        ):
            return None  # no budget at all (most calls): not even the clock is read
        now = self._clock()
        lines = budget_lines(held_key, configuration, now)
        if not lines:
            return None  # no budget applies: no database round trip
        held, bounded = ONE_REQUEST, False
        if measures_tokens(lines):
            held, bounded = await self._worst_case(request, models())
        ledger = self.recovery.ledger
        served_by = configuration.id if fallback else None
        try:
            hold = await self._while_busy(
                lambda: self.store.reserve(lines, held, now + self._hold, ledger.pending_for(lines))
            )
        except Refused as refused:
            self.recovery.reachable()
            raise refusal(
                refused.line, held, refused.used, now, prompt_upper_bound=bounded
            ) from None
        except BudgetBusy:
            raise  # waited for and refused: never an outage's admission
        except Exception as error:
            self._database_failed(error, lines, held, now, prompt_upper_bound=bounded)
            ledger.admit([line.key for line in lines], held)
            self.recovery.wake()
            return Reservation(Ticket(tuple(line.key for line in lines), held, None, served_by))
        self.recovery.reachable()
        self.live[hold.reservation_id] = hold
        return Reservation(Ticket(hold.keys, held, hold, served_by))

    async def count_hit(self, key: ApiKey | None, configuration: Configuration) -> None:
        """A cached answer is one request served: charged to request budgets, refused past them."""
        now = self._clock()
        every = budget_lines(key, configuration, now)
        lines = tuple(line for line in every if line.limits.requests)
        if not lines:
            return
        ledger = self.recovery.ledger
        try:
            await self._while_busy(
                lambda: self.store.charge(lines, ONE_REQUEST, ledger.pending_for(lines))
            )
        except Refused as refused:
            self.recovery.reachable()
            raise refusal(refused.line, ONE_REQUEST, refused.used, now) from None
        except BudgetBusy:
            raise  # waited for and refused: never an outage's admission
        except Exception as error:
            self._database_failed(error, lines, ONE_REQUEST, now)
            ledger.owe([line.key for line in lines], ONE_REQUEST)
            self.recovery.wake()
            return
        self.recovery.reachable()

    async def _while_busy(self, statement: Callable[[], Awaitable[_T]]) -> _T:
        """Run a budget statement, again while the database is busy; past the wait, refuse."""
        loop = asyncio.get_running_loop()
        give_up = loop.time() + self._busy_wait
        pause = BUSY_PAUSE_FIRST_SECONDS
        while True:
            try:
                return await statement()
            except Exception as error:
                if not is_busy(error):
                    raise
                if loop.time() + pause > give_up:
                    self.busy_refusals += 1
                    log.warning(
                        "budget database busy for %.0fs, call refused: %s",
                        self._busy_wait,
                        describe_error(error),
                    )
                    raise BudgetBusy(
                        "The budget database is too busy to check the call; retry shortly."
                    ) from None
            await asyncio.sleep(pause * (0.5 + random.random()))
            pause = min(2 * pause, BUSY_PAUSE_MAX_SECONDS)

    def _database_failed(
        self,
        error: Exception,
        lines: Sequence[BudgetLine],
        held: Amounts,
        now: datetime,
        *,
        prompt_upper_bound: bool = False,
    ) -> None:
        """Raise unless the call may be admitted unchecked (an outage, under ``admit``)."""
        if not is_connection_failure(error):
            log.error("budget check failed, call refused: %s", describe_error(error))
            raise BudgetCheckFailed("The gateway could not check the call's budget.") from None
        if self._refuse:
            log.error("budget database unreachable, call refused: %s", describe_error(error))
            raise BudgetUnavailable(
                "The budget database is unreachable; the call was not attempted."
            ) from None
        # What this process owes already is a floor under every counter: past it, refuse.
        over = self.recovery.ledger.refusing(lines, held)
        if over is not None:
            used = self.recovery.ledger.pending(over.key)
            raise refusal(over, held, used, now, prompt_upper_bound=prompt_upper_bound) from None
        self.unchecked += 1
        log.error("budget not checked, call admitted: %s", describe_error(error))

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
        ticket, reservation.token = reservation.token, None  # settled once, whoever asks again
        if not isinstance(ticket, Ticket):
            return
        served = ticket.served_by is None or record.served_configuration == ticket.served_by
        actual = actual_amounts(record) if served else NOTHING
        hold = ticket.hold
        if hold is None:
            self.recovery.ledger.end(ticket.keys, actual - ticket.held)
            self.recovery.wake()
            return
        try:
            await self.store.settle(hold, actual)
        except SettleUncertain:
            self.recovery.defer(hold, actual, uncertain=True)
            return
        except Exception as error:
            if is_connection_failure(error):
                # Kept (and its hold renewed) until the database takes it.
                self.recovery.defer(hold, actual, uncertain=False)
                return
            log.error("budget settlement failed: %s", describe_error(error))
        finally:
            self.live.pop(hold.reservation_id, None)

    async def sweep(self) -> int:
        return await self.upkeep.sweep()

    async def start(self) -> None:
        await self.upkeep.start()

    async def stop(self) -> None:
        """Stop the background work; on the way out, try once more to charge what an outage
        left in memory (it is lost with the process otherwise)."""
        await self.upkeep.stop()
        recovery = self.recovery
        if recovery.idle:
            return
        try:
            async with asyncio.timeout(FINAL_CHARGE_SECONDS):
                await recovery.charge_all()
        except Exception as error:
            log.error(
                "budget use of %d call(s) from an outage was never charged: %s",
                recovery.pending_calls,
                describe_error(error),
            )
