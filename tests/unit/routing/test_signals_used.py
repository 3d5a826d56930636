"""Which signals moved the decision: signalsUsed and the routing_signal_* flags."""

from __future__ import annotations

from gateway.domain.model import Criteria, Model, Operation, PolicyMode
from gateway.domain.signals import HistoryFigures, Signal
from gateway.pipeline.context import note_decision
from gateway.routing.decision import Decision
from gateway.routing.ranker import decide
from tests.unit.telemetry.factory import make_record

from .builders import CHAT, config, figures, history, model, price, snapshot, with_history

BALANCED = PolicyMode.BALANCED


def _used(
    mode: PolicyMode,
    models: list[Model],
    entries: dict[str, HistoryFigures] | None = None,
    criteria: Criteria | None = None,
    health: dict[str, float] | None = None,
    quality: dict[tuple[str, str], float] | None = None,
) -> Decision:
    hist = None if entries is None else history(entries, models=models)
    snap_ = snapshot(models, routing=with_history(), history=hist, health=health, quality=quality)
    return decide(config(mode, criteria=criteria), Operation.CHAT, CHAT, snap_)


def _flags(decision: Decision) -> dict[str, int]:
    """The routing_signal_* columns of the row the decision is noted on."""
    row = make_record()
    note_decision(row, decision)
    return {signal.flag_column: int(getattr(row, signal.flag_column)) for signal in Signal}


def test_signals_used_in_fixed_order_with_flags() -> None:
    models = [model("a", price=price("0.1", "0.1")), model("b", price=price("0.2", "0.2"))]
    entries = {"a": figures(10, 100.0), "b": figures(10, 900.0)}
    decision = _used(
        BALANCED,
        models,
        entries,
        Criteria(prefer_lowest_cost=True),
        health={"p1": 0.9},
        quality={("p1", "b"): 0.7},
    )
    assert decision.signals_used == ("quality", "health", "cost", "latency")
    assert _flags(decision) == {
        "routing_signal_quality": 1,
        "routing_signal_health": 1,
        "routing_signal_cost": 1,
        "routing_signal_latency": 1,
        "routing_signal_call_cost": 0,
    }


def test_absolute_signal_needs_one_value_of_its_own() -> None:
    models = [model("a"), model("b")]
    assert _used(BALANCED, models, quality={("p1", "a"): 0.3}).signals_used == ("quality",)
    assert _used(BALANCED, models).signals_used == ()


def test_list_cost_fill_is_not_a_value() -> None:
    # Nobody is priced: no fill is applied and cost did not move anything.
    models = [model("a"), model("b")]
    decision = _used(PolicyMode.ECONOMY, models, {"a": figures(10, 100.0), "b": figures(10, 900.0)})
    assert decision.cost_basis == "list"
    assert "cost" not in decision.signals_used


def test_relative_signal_moves_only_where_two_candidates_differ() -> None:
    models = [model("a"), model("b"), model("c")]
    at_mean = _used(BALANCED, models, {"a": figures(10, 500.0), "b": figures(10, 500.0)})
    assert "latency" not in at_mean.signals_used  # both at the mean, c unmeasured: all 0.5
    sole = _used(BALANCED, models, {"a": figures(10, 500.0)})
    assert "latency" not in sole.signals_used
    apart = _used(BALANCED, models, {"a": figures(10, 500.0), "b": figures(10, 600.0)})
    assert "latency" in apart.signals_used


def test_call_cost_moves_only_where_the_mode_weighs_it() -> None:
    models = [model("a", price=price("1", "1")), model("b", price=price("1", "1"))]
    entries = {"a": figures(10, 500.0, "0.01"), "b": figures(10, 500.0, "0.02")}
    economy = _used(PolicyMode.ECONOMY, models, entries)
    assert economy.signals_used == ("callCost",)
    assert _flags(economy)["routing_signal_call_cost"] == 1
    quality = _used(PolicyMode.QUALITY, models, entries, Criteria(prefer_lowest_cost=True))
    assert quality.cost_basis == "measured"
    assert quality.signals_used == ()  # weight 0; the tiebreak is never a signal
    assert [c.model.id for c in quality.candidates] == ["a", "b"]


def test_prefer_lowest_cost_tiebreak_is_never_a_signal() -> None:
    models = [model("dear", price=price("1", "1")), model("cheap", price=price("0.1", "0.1"))]
    decision = _used(
        PolicyMode.PROVIDER_PRIORITY, models, criteria=Criteria(prefer_lowest_cost=True)
    )
    assert decision.selected is not None and decision.selected.id == "cheap"
    assert decision.signals_used == ()
    assert set(_flags(decision).values()) == {0}
