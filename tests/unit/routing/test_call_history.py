"""The call-history signals through decide() (docs/routing.md#call-history)."""

from __future__ import annotations

import pytest

from gateway.domain.model import Criteria, Model, Operation, PolicyMode, RoutingSettings
from gateway.domain.signals import HistoryFigures, SignalValues
from gateway.routing.decision import Candidate, Decision
from gateway.routing.ranker import decide
from gateway.routing.signals import WEIGHTS, weighted_score

from .builders import (
    CHAT,
    config,
    failing_health,
    figures,
    history,
    model,
    price,
    snapshot,
    with_history,
)

BALANCED = PolicyMode.BALANCED
ECONOMY = PolicyMode.ECONOMY
BALANCED_WEIGHTS = WEIGHTS[PolicyMode.BALANCED].per_signal()
PREFER_CHEAP = Criteria(prefer_lowest_cost=True)


def _decide(
    models: list[Model],
    entries: dict[str, HistoryFigures] | None,
    mode: PolicyMode = BALANCED,
    criteria: Criteria | None = None,
    operation: Operation = Operation.CHAT,
    routing: RoutingSettings | None = None,
    health: dict[str, float] | None = None,
    telemetry_enabled: bool = True,
) -> Decision:
    hist = None if entries is None else history(entries, operation, models)
    snapshot_ = snapshot(
        models,
        routing=routing or with_history(),
        history=hist,
        health=health,
        telemetry_enabled=telemetry_enabled,
    )
    return decide(config(mode, criteria=criteria), operation, CHAT, snapshot_)


def _by_id(decision: Decision) -> dict[str, Candidate]:
    return {c.model.id: c for c in decision.candidates}


def _ranking(decision: Decision) -> list[tuple[str, float]]:
    return [(c.model.id, c.score) for c in decision.candidates]


def test_demo_latencies_on_a_provider_failing_one_in_five_lose_to_a_reliable_one() -> None:
    models = [model("fast", "flaky"), model("slow", "steady")]
    health = {"flaky": failing_health(1, 5), "steady": failing_health(0, 5)}
    entries = {"fast": figures(40, 4259.0), "slow": figures(40, 9094.0)}
    decision = _decide(models, entries, health=health)
    assert [c.model.id for c in decision.candidates] == ["slow", "fast"]
    fast = _by_id(decision)["fast"]
    assert fast.signals.latency == pytest.approx(0.5937, abs=5e-5)


@pytest.mark.parametrize(("failed", "of"), [(3, 20), (3, 10)])
def test_thirteen_times_faster_on_a_flaky_provider_loses_with_the_bound(
    failed: int, of: int
) -> None:
    models = [model("fast", "flaky"), model("slow", "steady")]
    health = {"flaky": failing_health(failed, of), "steady": failing_health(0, of)}
    entries = {"fast": figures(40, 300.0), "slow": figures(40, 3900.0)}
    decision = _decide(models, entries, health=health)
    assert decision.selected is not None and decision.selected.id == "slow"


def test_thirteen_times_faster_on_a_provider_failing_3_in_20_would_win_unbounded() -> None:
    models = [model("fast", "flaky"), model("slow", "steady")]
    health = {"flaky": failing_health(3, 20), "steady": failing_health(0, 20)}
    hist = history({"fast": figures(40, 300.0), "slow": figures(40, 3900.0)}, models=models)
    snap = snapshot(models, routing=with_history(), history=hist, health=health)
    unbounded = decide(config(BALANCED), Operation.CHAT, CHAT, snap, ratio_bound=None)
    assert unbounded.selected is not None and unbounded.selected.id == "fast"
    fast = _by_id(unbounded)["fast"]
    assert fast.signals.latency == pytest.approx(0.783, abs=5e-4)


def test_sole_measured_and_never_called_score_neutral_second_review_round() -> None:
    models = [model("serving"), model("never-called")]
    entries = {"serving": figures(40, 900.0)}
    decision = _decide(models, entries, health={"p1": 0.95})
    serving, fresh = _by_id(decision)["serving"], _by_id(decision)["never-called"]
    assert serving.signals.latency == 0.5
    assert fresh.signals.latency is None  # shown as no data
    assert serving.score == fresh.score == pytest.approx((0.4 * 0.95 + 0.1 * 0.5) / 0.5)
    assert decision.selected is not None and decision.selected.id == "serving"  # config order
    # Skipping the absence would have lifted the never-called model above the serving one ...
    skipped = weighted_score(SignalValues(health=0.95), BALANCED_WEIGHTS)
    assert skipped > serving.score
    # ... and the rejected "best over this" ratio (sole measured = 1.0) would have lifted it.
    best_over_this = weighted_score(SignalValues(health=0.95, latency=1.0), BALANCED_WEIGHTS)
    assert best_over_this > fresh.score


def test_economy_sole_measured_cloud_model_and_unpriced_local_one_tie() -> None:
    models = [model("local", "ollama"), model("cloud", "openai", price=price("0.15", "0.6"))]
    entries = {"cloud": figures(40, 900.0, "0.002")}
    decision = _decide(models, entries, mode=ECONOMY)
    assert decision.cost_basis == "measured"
    cloud, local = _by_id(decision)["cloud"], _by_id(decision)["local"]
    assert cloud.signals.call_cost == 0.5
    assert cloud.signals.latency == 0.5
    assert local.signals.call_cost is None
    assert cloud.score == local.score == 0.5
    assert decision.selected is not None and decision.selected.id == "local"
    assert decision.signals_used == ()


def test_relative_signal_nobody_has_is_absent() -> None:
    models = [model("a"), model("b")]
    decision = _decide(
        models, {"a": figures(3, 100.0), "b": figures(4, 9000.0)}, health={"p1": 0.9}
    )
    assert decision.call_history
    for candidate in decision.candidates:
        assert candidate.signals.latency is None
        assert candidate.score == pytest.approx(0.9)  # no 0.5 in anyone's score


def test_call_history_on_with_empty_history_changes_no_decision() -> None:
    models = [
        model("local", "ollama"),
        model("cloud", "openai", price=price("0.15", "0.6")),
        model("other", "openai", price=price("0.05", "0.05")),
    ]
    health = {"ollama": 0.7, "openai": 0.9}
    for mode in (BALANCED, ECONOMY, PolicyMode.QUALITY):
        off = _decide(models, None, mode, PREFER_CHEAP, routing=RoutingSettings(), health=health)
        on = _decide(models, {}, mode, PREFER_CHEAP, health=health)
        assert not off.call_history and on.call_history
        assert _ranking(on) == _ranking(off)
        assert on.cost_basis == off.cost_basis == "list"
        assert on.signals_used == off.signals_used
        assert all(c.history == HistoryFigures(0, None, 0, None) for c in on.candidates)


def test_history_none_decides_as_call_history_off() -> None:
    models = [model("a", price=price("0.1", "0.1")), model("b", price=price("0.3", "0.3"))]
    failed_read = _decide(models, None, ECONOMY, health={"p1": 0.8})
    off = _decide(models, None, ECONOMY, routing=RoutingSettings(), health={"p1": 0.8})
    assert not failed_read.call_history
    assert _ranking(failed_read) == _ranking(off)
    assert all(c.history is None for c in failed_read.candidates)


def test_history_is_not_read_with_telemetry_off_or_in_provider_priority() -> None:
    models = [model("a"), model("b")]
    entries = {"a": figures(40, 100.0), "b": figures(40, 9000.0)}
    no_telemetry = _decide(models, entries, telemetry_enabled=False)
    assert not no_telemetry.call_history
    assert {c.signals.latency for c in no_telemetry.candidates} == {None}
    priority = _decide(models, entries, PolicyMode.PROVIDER_PRIORITY)
    assert not priority.call_history
    assert [c.model.id for c in priority.candidates] == ["a", "b"]


def test_four_calls_are_no_figure_five_are() -> None:
    models = [model("a"), model("b")]
    four = _decide(models, {"a": figures(4, 100.0), "b": figures(40, 9000.0)})
    assert _by_id(four)["a"].signals.latency is None
    assert _by_id(four)["b"].signals.latency == 0.5  # sole measured
    five = _decide(models, {"a": figures(5, 100.0), "b": figures(40, 9000.0)})
    assert _by_id(five)["a"].signals.latency == pytest.approx(2 / 3)
    assert five.selected is not None and five.selected.id == "a"


def test_cost_figure_needs_min_costed_calls() -> None:
    models = [model("a", price=price("1", "1")), model("b", price=price("1", "1"))]
    entries = {"a": figures(40, 100.0, "0.01", costed=4), "b": figures(40, 100.0, "0.02")}
    decision = _decide(models, entries, ECONOMY)
    assert decision.cost_basis == "list"  # a has a list price and no measured cost figure


def test_min_calls_is_a_setting() -> None:
    models = [model("a"), model("b")]
    entries = {"a": figures(2, 100.0), "b": figures(2, 9000.0)}
    decision = _decide(models, entries, routing=with_history(call_history_min_calls=2))
    assert "latency" in decision.signals_used


def test_history_is_per_operation() -> None:
    models = [model("a"), model("b")]
    chat_history = history(
        {"a": figures(40, 100.0), "b": figures(40, 9000.0)}, Operation.CHAT, models
    )
    snap = snapshot(models, routing=with_history(), history=chat_history)
    stream = decide(config(BALANCED), Operation.STREAM, CHAT, snap)
    assert {c.signals.latency for c in stream.candidates} == {None}
    chat = decide(config(BALANCED), Operation.CHAT, CHAT, snap)
    assert "latency" in chat.signals_used


def test_history_is_keyed_by_provider_id() -> None:
    models = [model("m", "cloud"), model("m", "local")]
    hist = {
        ("cloud", "m", Operation.CHAT): figures(40, 9000.0),
        ("local", "m", Operation.CHAT): figures(40, 100.0),
    }
    snap = snapshot(models, routing=with_history(), history=hist)
    decision = decide(config(BALANCED), Operation.CHAT, CHAT, snap)
    assert [c.provider.id for c in decision.candidates] == ["local", "cloud"]


def test_measured_basis_when_every_priced_candidate_has_a_measured_cost() -> None:
    models = [model("a", price=price("1", "1")), model("b", price=price("0.1", "0.1"))]
    entries = {"a": figures(40, 1000.0, "0.0067"), "b": figures(40, 1000.0, "0.0184")}
    decision = _decide(models, entries, ECONOMY)
    assert decision.cost_basis == "measured"
    a = _by_id(decision)["a"]
    assert a.signals.cost is None
    assert a.signals.call_cost == pytest.approx(0.6237, abs=5e-5)
    assert decision.selected is not None and decision.selected.id == "a"  # dear list, cheap calls


def test_mixed_cost_bases_never_mix() -> None:
    models = [model("measured", price=price("1", "1")), model("listed", price=price("0.1", "0.1"))]
    entries = {"measured": figures(40, 1000.0, "0.0001")}
    decision = _decide(models, entries, ECONOMY)
    assert decision.cost_basis == "list"
    assert {c.signals.call_cost for c in decision.candidates} == {None}
    assert decision.selected is not None and decision.selected.id == "listed"
    assert _by_id(decision)["measured"].signals.cost == 0.0


def test_unpriced_model_with_no_priced_calls_blocks_neither_basis() -> None:
    models = [
        model("a", price=price("1", "1")),
        model("b", price=price("1", "1")),
        model("local"),
    ]
    entries = {"a": figures(40, 1000.0, "0.0067"), "b": figures(40, 1000.0, "0.0184")}
    decision = _decide(models, entries, ECONOMY)
    assert decision.cost_basis == "measured"
    local = _by_id(decision)["local"]
    assert local.signals.call_cost is None
    assert local.score == pytest.approx(0.5)  # latency 0.5, callCost 0.5 fill


def test_unpriced_model_counts_neutral_on_list_cost_while_history_in_play() -> None:
    # Streams carry no measured cost: the list basis applies, the latency history is in play.
    models = [model("cloud", "openai", price=price("0.05", "0.05")), model("local", "ollama")]
    entries = {"cloud": figures(40, 4000.0), "local": figures(40, 1000.0)}
    health = {"openai": 0.9, "ollama": 0.9}
    decision = _decide(models, entries, ECONOMY, operation=Operation.STREAM, health=health)
    assert decision.cost_basis == "list"
    local = _by_id(decision)["local"]
    assert local.signals.cost is None  # shown as no data
    expected = weighted_score(
        SignalValues(health=0.9, cost=0.5, latency=2 / 3), WEIGHTS[ECONOMY].per_signal()
    )
    assert local.score == pytest.approx(expected)


def test_unpriced_model_is_not_filled_when_history_is_not_in_play() -> None:
    models = [model("cloud", "openai", price=price("0.05", "0.05")), model("local", "ollama")]
    health = {"openai": 0.9, "ollama": 0.9}
    decision = _decide(models, {}, ECONOMY, health=health)
    assert _by_id(decision)["local"].score == pytest.approx(0.9)


def test_zero_measured_cost_scores_one_through_decide() -> None:
    models = [
        model("free", price=price("0", "0")),
        model("a", price=price("1", "1")),
        model("b", price=price("1", "1")),
    ]
    entries = {
        "free": figures(10, 1000.0, "0"),
        "a": figures(10, 1000.0, "0.01"),
        "b": figures(10, 1000.0, "0.04"),
    }
    decision = _decide(models, entries, ECONOMY)
    call_costs = {c.model.id: c.signals.call_cost for c in decision.candidates}
    assert call_costs == pytest.approx({"free": 1.0, "a": 2 / 3, "b": 1 / 3})


def test_measured_tiebreak_reads_the_measured_mean_cost() -> None:
    models = [
        model("list-cheap", price=price("0.1", "0.1")),
        model("calls-cheap", price=price("1", "1")),
    ]
    entries = {
        "list-cheap": figures(10, 1000.0, "0.05"),
        "calls-cheap": figures(10, 1000.0, "0.01"),
    }
    decision = _decide(models, entries, PolicyMode.QUALITY, PREFER_CHEAP)
    assert decision.cost_basis == "measured"
    assert [c.score for c in decision.candidates] == [0.5, 0.5]
    assert [c.model.id for c in decision.candidates] == ["calls-cheap", "list-cheap"]


def _stream_figures(total_ms: float, ttft_ms: float, measure: str) -> HistoryFigures:
    return HistoryFigures(
        calls=20,
        mean_latency_ms=total_ms,
        costed_calls=0,
        mean_cost=None,
        measure=measure,  # type: ignore[arg-type]
        ttft_ms=ttft_ms,
    )


@pytest.mark.parametrize(
    ("measure", "first", "latency_signal"), [("ttft", "a", 0.6340), ("total", "b", 0.5858)]
)
def test_streams_rank_on_the_measure_the_history_names(
    measure: str, first: str, latency_signal: float
) -> None:
    """docs/routing.md#stream-latency: a 300 ms / 6 s stream against a 900 ms / 3 s one."""
    models = [model("a"), model("b")]
    entries = {
        "a": _stream_figures(6000.0, 300.0, measure),
        "b": _stream_figures(3000.0, 900.0, measure),
    }
    decision = _decide(models, entries, operation=Operation.STREAM)
    assert decision.candidates[0].model.id == first
    assert decision.candidates[0].signals.latency == pytest.approx(latency_signal, abs=5e-5)
