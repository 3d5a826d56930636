"""The circuit state shown is the one routing acts on: a cooldown that has ended is
half-open (a trial call allowed), never "open until" a moment already past."""

from __future__ import annotations

from gateway.circuits import InProcessCircuits
from gateway.circuits.view import CircuitView, circuit_views


def _opened_at(at: float) -> InProcessCircuits:
    breakers = InProcessCircuits(failure_threshold=2, cooldown_seconds=30.0)
    breakers.record_failure("p1", at)
    breakers.record_failure("p1", at)
    return breakers


def test_a_closed_circuit_is_closed() -> None:
    breakers = InProcessCircuits(failure_threshold=2, cooldown_seconds=30.0)
    breakers.record_failure("p1", 100.0)

    (view,) = circuit_views(breakers, ["p1"], 101.0).values()

    assert view == CircuitView("closed") and view.gauge == 0


def test_during_the_cooldown_it_is_open_until_the_cooldown_ends() -> None:
    breakers = _opened_at(100.0)

    assert circuit_views(breakers, ["p1"], 129.0) == {"p1": CircuitView("open", until=130.0)}
    assert circuit_views(breakers, ["p1"], 129.0)["p1"].gauge == 2


def test_after_the_cooldown_it_is_half_open_with_a_trial_call_allowed_as_routing_sees_it() -> None:
    breakers = _opened_at(100.0)

    views = [circuit_views(breakers, ["p1"], now)["p1"] for now in (130.0, 131.0, 500.0)]

    assert views == [CircuitView("half_open", trial="allowed")] * 3  # the same on each refresh
    assert "p1" not in breakers.open_providers(131.0)  # routing may pick it
    assert views[0].gauge == 1


def test_while_the_trial_call_runs_others_are_refused_until_a_cooldown_from_its_start() -> None:
    breakers = _opened_at(100.0)
    assert breakers.try_acquire("p1", 140.0)  # the trial call

    view = circuit_views(breakers, ["p1"], 141.0)["p1"]

    assert view == CircuitView("half_open", until=170.0, trial="in_flight")
    assert not breakers.try_acquire("p1", 141.0)


def test_a_failed_trial_opens_it_again_and_a_successful_one_closes_it() -> None:
    breakers = _opened_at(100.0)
    assert breakers.try_acquire("p1", 140.0)
    breakers.record_failure("p1", 141.0)
    assert circuit_views(breakers, ["p1"], 142.0)["p1"] == CircuitView("open", until=171.0)

    assert breakers.try_acquire("p1", 171.0)
    breakers.record_success("p1")
    assert circuit_views(breakers, ["p1"], 172.0)["p1"] == CircuitView("closed")
