"""What an outage leaves owed per counter, its batches, and the refusals it decides alone."""

from __future__ import annotations

import itertools
from datetime import date
from decimal import Decimal

from gateway.budgets.figures import NOTHING, ONE_REQUEST, Amounts
from gateway.budgets.ledger import OutageLedger
from gateway.budgets.windows import BudgetLine, CounterKey
from gateway.domain.model import BudgetLimits

DAY = CounterKey("key", "alice", "day", date(2026, 11, 29))
MONTH = CounterKey("key", "alice", "month", date(2026, 11, 1))
WORST = Amounts(1, 1000, Decimal("0.01"))


def _ledger() -> OutageLedger:
    ids = (f"batch{i}" for i in itertools.count())
    return OutageLedger(lambda: next(ids))


def test_an_admitted_call_owes_its_worst_case_then_its_actual() -> None:
    ledger = _ledger()
    ledger.admit([DAY, MONTH], WORST)
    assert ledger.pending(DAY) == WORST == ledger.pending(MONTH)
    assert ledger.pending_calls == 1
    ledger.end([DAY, MONTH], Amounts(1, 30, Decimal("0.001")) - WORST)
    assert ledger.pending(DAY) == Amounts(1, 30, Decimal("0.001"))
    assert (ledger.open_calls, ledger.pending_calls) == (0, 1)


def test_a_call_that_used_nothing_leaves_nothing_owed() -> None:
    ledger = _ledger()
    ledger.admit([DAY], WORST)
    ledger.end([DAY], NOTHING - WORST)
    assert ledger.is_empty and ledger.pending(DAY) == NOTHING


def test_a_batch_is_retried_as_it_was_until_charged_and_new_debt_waits_for_the_next() -> None:
    ledger = _ledger()
    ledger.owe([DAY], ONE_REQUEST)
    first = ledger.next_batch(10)
    assert first is not None and first.amounts == {DAY: ONE_REQUEST}
    ledger.owe([DAY], ONE_REQUEST)  # arrives while the batch is out
    assert ledger.pending(DAY) == Amounts(2, 0, Decimal(0))  # both count until charged
    again = ledger.next_batch(10)
    assert again is first and again.id == "batch0"  # the same id: a retry is recognised
    ledger.charged(first)
    second = ledger.next_batch(10)
    assert second is not None and second.id == "batch1" and second.amounts == {DAY: ONE_REQUEST}
    ledger.charged(second)
    assert ledger.next_batch(10) is None
    assert ledger.is_empty and ledger.pending_calls == 0


def test_a_batch_takes_at_most_its_size_in_counter_order() -> None:
    ledger = _ledger()
    ledger.owe([MONTH, DAY], ONE_REQUEST)
    batch = ledger.next_batch(1)
    assert batch is not None and list(batch.amounts) == [min(DAY, MONTH)]


def test_a_running_call_keeps_the_pending_count_after_its_worst_case_is_charged() -> None:
    ledger = _ledger()
    ledger.admit([DAY], WORST)
    batch = ledger.next_batch(10)
    assert batch is not None
    ledger.charged(batch)
    assert ledger.pending_calls == 1  # its actual figures are still to come
    ledger.end([DAY], ONE_REQUEST - WORST)
    assert ledger.pending(DAY) == ONE_REQUEST - WORST  # a correction, negative


def test_what_is_owed_refuses_what_no_counter_could_admit() -> None:
    ledger = _ledger()
    line = BudgetLine(DAY, BudgetLimits(requests=2, cost=Decimal("0.05")))
    assert ledger.refusing([line], WORST) is None
    ledger.admit([DAY], WORST)
    ledger.admit([DAY], WORST)
    assert ledger.refusing([line], WORST) is line  # requests: 2 + 1 > 2
    cost_only = BudgetLine(DAY, BudgetLimits(cost=Decimal("0.025")))
    assert ledger.refusing([cost_only], WORST) is cost_only  # 0.02 + 0.01 > 0.025
    assert ledger.refusing([cost_only], Amounts(1, 0, Decimal("0.005"))) is None
