"""What calls admitted during a database outage used, kept per budget counter (pure).

While the database is down a call admitted unchecked owes its worst case on
each of its counters; when it ends, its actual figures replace that. What is
owed is charged to the counters in batches once the database is back. A batch
keeps its id until it is known to be charged, so a retry after an uncertain
commit is recognised instead of charged twice.

What is owed is also a lower bound of what each counter really stands at, so
it refuses, on its own, a call that no counter value could admit.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gateway.budgets.figures import NOTHING, Amounts
from gateway.budgets.windows import BudgetLine, CounterKey


def _new_id() -> str:
    return uuid.uuid4().hex


@dataclass(slots=True)
class Batch:
    """Amounts to add to counters in one transaction, under an id of its own."""

    id: str
    amounts: dict[CounterKey, Amounts] = field(default_factory=dict)


class OutageLedger:
    def __init__(self, new_id: Callable[[], str] = _new_id) -> None:
        self._new_id = new_id
        self._owed: dict[CounterKey, Amounts] = {}
        self._batch: Batch | None = None  # taken, not yet known to be charged
        self.open_calls = 0  # admitted unchecked and still running
        self._ended_calls = 0  # ended since everything owed was last charged

    @property
    def is_empty(self) -> bool:
        return not self._owed and self._batch is None

    @property
    def pending_calls(self) -> int:
        """Calls whose use may not all be in the database yet."""
        return self.open_calls + self._ended_calls

    def admit(self, keys: Iterable[CounterKey], held: Amounts) -> None:
        """A call admitted unchecked owes its worst case until it ends."""
        self._add(keys, held)
        self.open_calls += 1

    def end(self, keys: Iterable[CounterKey], change: Amounts) -> None:
        """The call ended: ``change`` (actual minus worst case) corrects what it owed."""
        self._add(keys, change)
        self.open_calls = max(self.open_calls - 1, 0)
        self._ended_calls += 1

    def owe(self, keys: Iterable[CounterKey], amounts: Amounts) -> None:
        """A call that began and ended unchecked at once (a cache hit)."""
        self._add(keys, amounts)
        self._ended_calls += 1

    def pending(self, key: CounterKey) -> Amounts:
        """What this process owes ``key`` and the database may not have yet."""
        owed = self._owed.get(key, NOTHING)
        if self._batch is not None:
            return owed + self._batch.amounts.get(key, NOTHING)
        return owed

    def pending_for(self, lines: Sequence[BudgetLine]) -> Mapping[CounterKey, Amounts]:
        if self.is_empty:
            return {}
        return {line.key: self.pending(line.key) for line in lines}

    def refusing(self, lines: Sequence[BudgetLine], held: Amounts) -> BudgetLine | None:
        """The first line that ``held`` on top of what is owed would pass, if any."""
        if self.is_empty:
            return None
        for line in lines:
            if not fits(line, self.pending(line.key), held):
                return line
        return None

    def next_batch(self, size: int) -> Batch | None:
        """The batch to charge: the one not yet confirmed, else up to ``size`` counters."""
        if self._batch is not None:
            return self._batch
        if not self._owed:
            return None
        keys = sorted(self._owed)[:size]  # the order every transaction takes counters in
        self._batch = Batch(self._new_id(), {key: self._owed.pop(key) for key in keys})
        return self._batch

    def charged(self, batch: Batch) -> None:
        """``batch`` is in the database (or is given up)."""
        if self._batch is batch:
            self._batch = None
        if self.is_empty and not self.open_calls:
            self._ended_calls = 0

    def _add(self, keys: Iterable[CounterKey], amounts: Amounts) -> None:
        if amounts.is_zero:
            return
        for key in keys:
            total = self._owed.get(key, NOTHING) + amounts
            if total.is_zero:
                self._owed.pop(key, None)
            else:
                self._owed[key] = total


def fits(line: BudgetLine, used: Amounts, held: Amounts) -> bool:
    """``used + held <= limit`` on each measure the line limits."""
    limits = line.limits
    if limits.requests and used.requests + held.requests > limits.requests:
        return False
    if limits.tokens and used.tokens + held.tokens > limits.tokens:
        return False
    return not (limits.cost and used.cost + held.cost > limits.cost)
