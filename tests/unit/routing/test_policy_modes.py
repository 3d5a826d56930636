from decimal import Decimal

import pytest

from gateway.domain.model import Criteria, Operation, PolicyMode, RoutingSettings
from gateway.domain.signals import Signal, SignalValues
from gateway.routing.decision import Decision
from gateway.routing.ranker import decide
from gateway.routing.signals import WEIGHTS, Weights, list_cost_score, weighted_score

from .builders import CHAT, config, figures, history, model, price, provider, snapshot

BALANCED = PolicyMode.BALANCED
ECONOMY = PolicyMode.ECONOMY
QUALITY = PolicyMode.QUALITY
PRIORITY = PolicyMode.PROVIDER_PRIORITY


def _ids(decision: Decision) -> list[str]:
    return [c.model.id for c in decision.candidates]


def test_weights_table_is_pinned() -> None:
    assert {
        PRIORITY: Weights(0, 0, 0, 0),
        BALANCED: Weights(0.4, 0.4, 0.2, 0.1),
        QUALITY: Weights(0.7, 0.3, 0, 0.05),
        ECONOMY: Weights(0.1, 0.3, 0.6, 0.05),
    } == WEIGHTS


def test_score_is_weighted_mean_over_weighted_signals_with_values() -> None:
    balanced = WEIGHTS[BALANCED].per_signal()
    assert weighted_score(SignalValues(quality=0.2, cost=1.0), balanced) == (
        pytest.approx((0.4 * 0.2 + 0.2 * 1.0) / 0.6)
    )
    every = SignalValues(0.9, 0.9, 0.9, 0.9, 0.9)
    assert weighted_score(every, WEIGHTS[PolicyMode.PROVIDER_PRIORITY].per_signal()) == 0.5
    assert weighted_score(SignalValues(), balanced) == 0.5


def test_the_cost_weight_weighs_both_cost_signals() -> None:
    for weights in WEIGHTS.values():
        per_signal = weights.per_signal()
        assert list(per_signal) == list(Signal)
        assert per_signal[Signal.COST] == per_signal[Signal.CALL_COST] == weights.cost


def test_provider_priority_keeps_ordering_and_reads_no_signal() -> None:
    models = [model("low", "p-low"), model("high", "p-high"), model("also-high", "p-high")]
    snap = snapshot(
        models,
        providers=[provider("p-low", priority=10), provider("p-high", priority=90)],
        routing=RoutingSettings(call_history=True),
        health={"p-low": 1.0, "p-high": 0.0},
        quality={("p-low", "low"): 1.0, ("p-high", "high"): 0.0},
        history=history({"high": figures(50, 90_000.0, "9")}, models=models),
    )
    decision = decide(
        config(criteria=Criteria(prefer_lowest_cost=True)), Operation.CHAT, CHAT, snap
    )
    assert decision.mode is PRIORITY
    assert _ids(decision) == ["high", "also-high", "low"]
    assert not decision.call_history
    assert decision.cost_basis is None
    assert decision.signals_used == ()
    for candidate in decision.candidates:
        assert candidate.score == 0.5
        assert candidate.signals == SignalValues()
        assert candidate.history is None


def test_operator_priority_outranks_any_score() -> None:
    models = [model("best", "p10"), model("worst", "p90")]
    snap = snapshot(
        models,
        providers=[provider("p10", priority=10), provider("p90", priority=90)],
        quality={("p10", "best"): 1.0, ("p90", "worst"): 0.1},
    )
    decision = decide(config(QUALITY), Operation.CHAT, CHAT, snap)
    assert _ids(decision) == ["worst", "best"]
    assert decision.candidates[0].score < decision.candidates[1].score


def test_unmeasured_model_beats_one_measured_low() -> None:
    models = [model("measured"), model("unmeasured")]
    snap = snapshot(models, quality={("p1", "measured"): 0.1})
    decision = decide(config(QUALITY), Operation.CHAT, CHAT, snap)
    assert _ids(decision) == ["unmeasured", "measured"]
    assert decision.candidates[0].signals.quality is None
    assert decision.candidates[0].score == 0.5
    assert decision.candidates[1].score == pytest.approx(0.1)


def test_configuration_mode_overrides_global_and_override_param_wins() -> None:
    snap = snapshot([model("a")], routing=RoutingSettings(policy_mode=ECONOMY))
    assert decide(config(), Operation.CHAT, CHAT, snap).mode is ECONOMY
    assert decide(config(QUALITY), Operation.CHAT, CHAT, snap).mode is QUALITY
    overridden = decide(config(QUALITY), Operation.CHAT, CHAT, snap, mode_override=BALANCED)
    assert overridden.mode is BALANCED and overridden.mode_overridden
    assert not decide(config(QUALITY), Operation.CHAT, CHAT, snap).mode_overridden


def test_fixed_configuration_takes_no_decision() -> None:
    from gateway.domain.model import Configuration, ConfigurationMode

    fixed = Configuration(id="f", mode=ConfigurationMode.FIXED, model="a")
    with pytest.raises(ValueError):
        decide(fixed, Operation.CHAT, CHAT, snapshot([model("a")]))


def test_list_cost_score_formula() -> None:
    ceiling = Decimal("1.00")
    assert list_cost_score(price("0.05", "0.05"), ceiling) == pytest.approx(0.9)
    assert list_cost_score(price("0", "0"), ceiling) == 1.0  # free is a claim, and the best one
    assert list_cost_score(price("2.50", "10"), ceiling) == 0.0  # the ceiling saturates
    assert list_cost_score(None, ceiling) is None  # unpriced is not free
    assert list_cost_score(price("2.50", "10"), Decimal("25")) == pytest.approx(0.5)


def test_economy_ranks_cheaper_list_price_first() -> None:
    models = [
        model("dear", price=price("0.15", "0.60")),
        model("cheap", price=price("0.05", "0.05")),
    ]
    decision = decide(config(ECONOMY), Operation.CHAT, CHAT, snapshot(models))
    assert _ids(decision) == ["cheap", "dear"]
    assert decision.cost_basis == "list"
    assert decision.candidates[0].signals.cost == pytest.approx(0.9)
    assert decision.candidates[1].signals.cost == pytest.approx(0.25)
    assert decision.signals_used == ("cost",)


def test_list_price_ceiling_is_a_setting() -> None:
    models = [model("a", price=price("2.5", "10")), model("b", price=price("5", "15"))]
    saturated = decide(config(ECONOMY), Operation.CHAT, CHAT, snapshot(models))
    assert [c.score for c in saturated.candidates] == [0.0, 0.0]
    routing = RoutingSettings(list_price_ceiling=Decimal("40"))
    raised = decide(config(ECONOMY), Operation.CHAT, CHAT, snapshot(models, routing=routing))
    assert _ids(raised) == ["a", "b"]
    assert raised.candidates[0].score == pytest.approx(1 - 12.5 / 40)


def test_unpriced_model_loses_in_economy_to_a_cheap_priced_one() -> None:
    models = [model("unpriced"), model("priced", price=price("0.05", "0.05"))]
    decision = decide(config(ECONOMY), Operation.CHAT, CHAT, snapshot(models))
    assert _ids(decision) == ["priced", "unpriced"]
    assert decision.candidates[1].signals.cost is None
    assert decision.candidates[1].score == 0.5


def test_balanced_collects_no_cost_until_prefer_lowest_cost() -> None:
    models = [model("dear", price=price("0.5", "0.5")), model("cheap", price=price("0.1", "0.1"))]
    plain = decide(config(BALANCED), Operation.CHAT, CHAT, snapshot(models))
    assert plain.cost_basis is None
    assert _ids(plain) == ["dear", "cheap"]
    assert {c.signals.cost for c in plain.candidates} == {None}
    criteria = Criteria(prefer_lowest_cost=True)
    preferring = decide(config(BALANCED, criteria=criteria), Operation.CHAT, CHAT, snapshot(models))
    assert preferring.cost_basis == "list"
    assert _ids(preferring) == ["cheap", "dear"]
    assert preferring.candidates[0].score == pytest.approx(0.8)


def test_quality_mode_collects_cost_for_the_readout_only() -> None:
    models = [model("dear", price=price("0.5", "0.5")), model("cheap", price=price("0.1", "0.1"))]
    criteria = Criteria(prefer_lowest_cost=True)
    decision = decide(config(QUALITY, criteria=criteria), Operation.CHAT, CHAT, snapshot(models))
    assert decision.cost_basis == "list"
    assert [c.score for c in decision.candidates] == [0.5, 0.5]  # weight 0: no score
    assert decision.candidates[0].signals.cost == pytest.approx(0.8)
    assert "cost" not in decision.signals_used
    assert _ids(decision) == ["cheap", "dear"]  # the tiebreak, not the score


def test_prefer_lowest_cost_tiebreak_sorts_no_figure_last() -> None:
    models = [
        model("unpriced"),
        model("dear", price=price("0.5", "0.5")),
        model("cheap", price=price("0.1", "0.1")),
    ]
    criteria = Criteria(prefer_lowest_cost=True)
    decision = decide(config(QUALITY, criteria=criteria), Operation.CHAT, CHAT, snapshot(models))
    assert _ids(decision) == ["cheap", "dear", "unpriced"]


def test_prefer_lowest_cost_in_provider_priority_reads_the_list_price() -> None:
    models = [model("dear", price=price("0.5", "0.5")), model("cheap", price=price("0.1", "0.1"))]
    criteria = Criteria(prefer_lowest_cost=True)
    decision = decide(config(criteria=criteria), Operation.CHAT, CHAT, snapshot(models))
    assert _ids(decision) == ["cheap", "dear"]
    assert decision.cost_basis is None


def test_default_model_wins_a_tie_then_config_order() -> None:
    models = [model("first"), model("second"), model("marked", default=True), model("last")]
    decision = decide(config(BALANCED), Operation.CHAT, CHAT, snapshot(models))
    assert _ids(decision) == ["marked", "first", "second", "last"]
    assert [c.rank for c in decision.candidates] == [1, 2, 3, 4]


def test_cheaper_tiebreak_comes_before_default() -> None:
    models = [
        model("default", default=True, price=price("1", "1")),
        model("cheap", price=price("0", "0")),
    ]
    criteria = Criteria(prefer_lowest_cost=True)
    decision = decide(config(criteria=criteria), Operation.CHAT, CHAT, snapshot(models))
    assert _ids(decision) == ["cheap", "default"]


def test_no_data_anywhere_scores_everyone_neutral() -> None:
    models = [model("a"), model("b")]
    for mode in (BALANCED, QUALITY, ECONOMY):
        decision = decide(config(mode), Operation.CHAT, CHAT, snapshot(models))
        assert [c.score for c in decision.candidates] == [0.5, 0.5]
        assert _ids(decision) == ["a", "b"]
        assert decision.signals_used == ()


def test_health_and_quality_are_keyed_by_provider_id() -> None:
    # Two providers of one adapter type must not share a score.
    models = [model("m", "cloud"), model("m2", "local")]
    snap = snapshot(models, health={"cloud": 0.2, "local": 0.9})
    decision = decide(config(BALANCED), Operation.CHAT, CHAT, snap)
    assert _ids(decision) == ["m2", "m"]
    assert decision.candidates[0].signals.health == 0.9
    assert decision.signals_used == ("health",)
