"""Budget holds in the database: exact across every process sharing it.

Admission is one transaction: the reservation rows, then per budget line one
conditional UPDATE (``used + hold <= limit``) on its counter row, in the lines'
sorted order. Row locks serialise concurrent admissions on PostgreSQL and
MariaDB (an UPDATE re-reads the committed row it waited for), SQLite's single
writer does the same; so a burst can never admit past a limit. A refusal by
any line rolls the whole transaction back and leaves nothing held.

What a process still owes a counter from a database outage (not charged yet)
joins the condition, so the database refuses what it would refuse once that
is charged. Charging it writes zero-amount marker rows under the batch's id in
the same transaction: a retry after an uncertain commit meets its own marker
and charges nothing twice.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Literal

from sqlalchemy import ColumnElement, and_, delete, insert, select, update
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from gateway.budgets.figures import NOTHING, Amounts
from gateway.budgets.windows import BudgetLine, CounterKey
from gateway.db.budget_tables import budget_counters, budget_reservations
from gateway.db.failures import is_connection_failure
from gateway.db.upserts import insert_or_ignore
from gateway.domain.errors import GatewayException

Owed = Mapping[CounterKey, Amounts]

_c = budget_counters.c
_r = budget_reservations.c


@dataclass(frozen=True, slots=True)
class Hold:
    """One call's hold: the same amounts on each of its counters."""

    reservation_id: str
    keys: tuple[CounterKey, ...]
    amounts: Amounts


class Refused(GatewayException):
    """A line's limit would be passed; ``used`` is its counter as it stood."""

    def __init__(self, line: BudgetLine, used: Amounts | None) -> None:
        super().__init__(line.describe())
        self.line = line
        self.used = used


class SettleUncertain(GatewayException):
    """The connection failed while a settlement committed: it may or may not have landed."""


# Sums stored as Numeric(18, 10) are multiples of 1e-10; SQLite keeps them as doubles, where
# 0.1 + 0.1 + 0.1 > 0.3. Half a quantum of slack admits what fits exactly, on every dialect.
_COST_SLACK = Decimal("0.00000000005")
_DEADLOCK_TRIES = 4
_KNOWN_LIMIT = 10_000
_RENEW_BATCH = 500


class BudgetStore:
    def __init__(self, engine: AsyncEngine) -> None:
        self._engine = engine
        self._insert_missing = _insert_if_missing(engine.dialect.name)
        self._known: set[CounterKey] = set()  # counter rows known to exist

    async def reserve(
        self,
        lines: Sequence[BudgetLine],
        amounts: Amounts,
        expires_at: datetime,
        owed: Owed | None = None,
    ) -> Hold:
        """Hold ``amounts`` on every line, or raise :class:`Refused` holding nothing."""
        hold = Hold(uuid.uuid4().hex, tuple(line.key for line in lines), amounts)
        rows = [
            {
                "reservation_id": hold.reservation_id,
                "line": index,
                **_key_values(key),
                **_amount_values(amounts),
                "expires_at": expires_at,
            }
            for index, key in enumerate(hold.keys)
        ]
        await self._ensure_counters(hold.keys)
        for attempt in range(_DEADLOCK_TRIES):
            try:
                async with self._engine.begin() as connection:
                    # The reservation rows first: they lock nothing others wait for.
                    await connection.execute(insert(budget_reservations), rows)
                    await self._take_all(connection, lines, amounts, owed or {})
                return hold
            except DBAPIError as error:
                # Lock order is the same everywhere, but InnoDB can still pick a victim.
                if attempt + 1 == _DEADLOCK_TRIES or not _is_deadlock(error):
                    raise
        raise AssertionError("unreachable")

    async def charge(
        self, lines: Sequence[BudgetLine], amounts: Amounts, owed: Owed | None = None
    ) -> None:
        """Add ``amounts`` at once where each line has room (a call that ends as it begins,
        like a cache hit), or raise :class:`Refused` adding nothing."""
        await self._ensure_counters([line.key for line in lines])
        for attempt in range(_DEADLOCK_TRIES):
            try:
                async with self._engine.begin() as connection:
                    await self._take_all(connection, lines, amounts, owed or {})
                return
            except DBAPIError as error:
                if attempt + 1 == _DEADLOCK_TRIES or not _is_deadlock(error):
                    raise

    async def _take_all(
        self, connection: AsyncConnection, lines: Sequence[BudgetLine], held: Amounts, owed: Owed
    ) -> None:
        for line in lines:
            extra = owed.get(line.key, NOTHING)
            if not await self._take(connection, line, held, extra):
                used = await _used(connection, line.key)
                raise Refused(line, used + extra if used is not None else None)

    async def _ensure_counters(self, keys: Sequence[CounterKey]) -> None:
        """Create missing counter rows in a transaction of their own.

        Inside the admission transaction an INSERT IGNORE on an existing row takes a shared
        lock on InnoDB, and two refused admissions then deadlock on their UPDATEs.
        """
        missing = [key for key in keys if key not in self._known]
        if not missing:
            return
        async with self._engine.begin() as connection:
            for key in missing:
                await connection.execute(self._insert_missing(_key_values(key)))
        if len(self._known) > _KNOWN_LIMIT:
            self._known.clear()
        self._known.update(missing)

    async def settle(
        self, hold: Hold, actual: Amounts, *, if_gone: Literal["add", "skip"] = "add"
    ) -> None:
        """Replace the hold by ``actual``. When its rows are gone a sweep released them
        (``add`` actual), or, retrying an uncertain settlement, it had landed (``skip``)."""
        committing = False
        try:
            async with self._engine.begin() as connection:
                result = await connection.execute(
                    delete(budget_reservations).where(_r.reservation_id == hold.reservation_id)
                )
                if result.rowcount:
                    change = actual - hold.amounts
                else:
                    change = actual if if_gone == "add" else NOTHING
                if not change.is_zero:
                    for key in hold.keys:
                        await connection.execute(_add(key, change))
                committing = True
        except Exception as error:
            if committing and is_connection_failure(error):
                raise SettleUncertain(hold.reservation_id) from error
            raise

    async def renew(self, reservation_ids: Sequence[str], expires_at: datetime) -> int:
        """Push the expiry of live holds on, one statement per batch; returns rows renewed."""
        renewed = 0
        for start in range(0, len(reservation_ids), _RENEW_BATCH):
            batch = list(reservation_ids[start : start + _RENEW_BATCH])
            async with self._engine.begin() as connection:
                result = await connection.execute(
                    update(budget_reservations)
                    .where(_r.reservation_id.in_(batch))
                    .values(expires_at=expires_at)
                )
            renewed += int(result.rowcount or 0)
        return renewed

    async def charge_owed(
        self, batch_id: str, amounts: Mapping[CounterKey, Amounts], marker_expires_at: datetime
    ) -> bool:
        """Add what an outage left owed, once: False when ``batch_id`` was charged already."""
        keys = sorted(amounts)
        markers = [
            {
                "reservation_id": batch_id,
                "line": index,
                **_key_values(key),
                **_amount_values(NOTHING),
                "expires_at": marker_expires_at,
            }
            for index, key in enumerate(keys)
        ]
        await self._ensure_counters(keys)
        for attempt in range(_DEADLOCK_TRIES):
            try:
                async with self._engine.begin() as connection:
                    await connection.execute(insert(budget_reservations), markers)
                    for key in keys:
                        await connection.execute(_add(key, amounts[key]))
                return True
            except IntegrityError:
                return False  # the marker is there: an earlier try committed
            except DBAPIError as error:
                if attempt + 1 == _DEADLOCK_TRIES or not _is_deadlock(error):
                    raise
        raise AssertionError("unreachable")

    async def forget_marker(self, batch_id: str) -> None:
        """Markers hold nothing; one left behind is removed by the sweep when it expires."""
        async with self._engine.begin() as connection:
            await connection.execute(
                delete(budget_reservations).where(_r.reservation_id == batch_id)
            )

    async def release_expired(self, now: datetime, batch: int = 200) -> int:
        """Release the holds of calls that never settled (their process died)."""
        async with self._engine.connect() as connection:
            found = await connection.execute(
                select(_r.reservation_id)
                .where(_r.expires_at < now)
                .order_by(_r.expires_at)
                .limit(batch)
            )
            ids = list(dict.fromkeys(found.scalars()))
        released = 0
        for reservation_id in ids:
            released += await self._release(reservation_id)
        return released

    async def purge_windows(self, before: date) -> int:
        """Forget counters of windows that started before ``before``."""
        async with self._engine.begin() as connection:
            result = await connection.execute(
                delete(budget_counters).where(_c.window_start < before)
            )
        return int(result.rowcount or 0)

    async def used(self, key: CounterKey) -> Amounts | None:
        async with self._engine.connect() as connection:
            return await _used(connection, key)

    async def _take(
        self, connection: AsyncConnection, line: BudgetLine, held: Amounts, owed: Amounts
    ) -> bool:
        statement = _add(line.key, held, _within(line, held + owed))
        if (await connection.execute(statement)).rowcount == 1:
            return True
        if await _used(connection, line.key) is not None:
            return False  # the limit refuses
        # The row went away since it was ensured (a purge of old windows): make it again.
        self._known.discard(line.key)
        await connection.execute(self._insert_missing(_key_values(line.key)))
        return bool((await connection.execute(statement)).rowcount == 1)

    async def _release(self, reservation_id: str) -> int:
        async with self._engine.begin() as connection:
            found = await connection.execute(
                select(budget_reservations).where(_r.reservation_id == reservation_id)
            )
            rows = found.mappings().all()
            result = await connection.execute(
                delete(budget_reservations).where(_r.reservation_id == reservation_id)
            )
            if not rows or result.rowcount != len(rows):
                return 0  # settled meanwhile: the settle owns the figures
            for row in rows:
                key = CounterKey(row["scope"], row["scope_id"], row["period"], row["window_start"])
                held = Amounts(row["requests"], row["tokens"], Decimal(str(row["cost"])))
                if not held.is_zero:  # a charge's marker holds nothing
                    await connection.execute(_add(key, -held))
        return 1


def _key_values(key: CounterKey) -> dict[str, Any]:
    return {
        "scope": key.scope,
        "scope_id": key.scope_id,
        "period": key.period,
        "window_start": key.window_start,
    }


def _amount_values(amounts: Amounts) -> dict[str, Any]:
    return {"requests": amounts.requests, "tokens": amounts.tokens, "cost": amounts.cost}


def _matches(key: CounterKey) -> ColumnElement[bool]:
    return and_(
        _c.scope == key.scope,
        _c.scope_id == key.scope_id,
        _c.period == key.period,
        _c.window_start == key.window_start,
    )


def _within(line: BudgetLine, held: Amounts) -> list[ColumnElement[bool]]:
    """``used + hold <= limit`` for each limited measure (``held`` includes what is owed)."""
    limits = line.limits
    conditions: list[ColumnElement[bool]] = []
    if limits.requests:
        conditions.append(_c.requests + held.requests <= limits.requests)
    if limits.tokens:
        conditions.append(_c.tokens + held.tokens <= limits.tokens)
    if limits.cost:
        conditions.append(_c.cost + held.cost <= limits.cost + _COST_SLACK)
    return conditions


def _add(key: CounterKey, change: Amounts, conditions: Sequence[ColumnElement[bool]] = ()) -> Any:
    return (
        update(budget_counters)
        .where(_matches(key), *conditions)
        .values(
            requests=_c.requests + change.requests,
            tokens=_c.tokens + change.tokens,
            cost=_c.cost + change.cost,
        )
    )


async def _used(connection: AsyncConnection, key: CounterKey) -> Amounts | None:
    found = await connection.execute(select(_c.requests, _c.tokens, _c.cost).where(_matches(key)))
    row = found.first()
    if row is None:
        return None
    return Amounts(int(row[0]), int(row[1]), Decimal(str(row[2])))


def _is_deadlock(error: DBAPIError) -> bool:
    """MySQL/MariaDB 1213, PostgreSQL 40P01 (deadlock) and 40001 (serialization)."""
    original = error.orig
    code = getattr(original, "sqlstate", None) or getattr(original, "pgcode", None)
    if code in ("40P01", "40001"):
        return True
    args: tuple[object, ...] = tuple(getattr(original, "args", ()))
    return len(args) > 0 and args[0] == 1213


def _insert_if_missing(dialect: str) -> Any:
    """An INSERT of a zero counter that does nothing when the row exists."""
    return insert_or_ignore(dialect, budget_counters).values
