"""The readout (docs/routing.md#the-readout): its JSON for a known decision, and the
terminal table."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.domain.model import (
    Capability,
    Configuration,
    ConfigurationMode,
    Criteria,
    Enforcement,
    Operation,
    PolicyMode,
    RoutingSettings,
)
from gateway.routing.decision import Decision
from gateway.routing.ranker import decide
from gateway.routing.readout import explain, explain_fixed, render_table

from .builders import (
    CHAT,
    config,
    figures,
    history,
    model,
    price,
    provider,
    snapshot,
    with_history,
)

CHAT_CRITERIA = Criteria(capabilities=frozenset({Capability.CHAT}), prefer_lowest_cost=True)


def _spec_example() -> Decision:
    models = [
        model("gpt-4o-mini", "openai-main", price=price("0.15", "0.60")),
        model("gpt-4o", "openai-main", price=price("2.50", "10")),
        model("text-embedding-3-small", "openai-main", caps=[Capability.EMBEDDINGS]),
    ]
    entries = {
        "gpt-4o-mini": figures(40, 4259.0, "0.0067"),
        "gpt-4o": figures(40, 9094.0, "0.0184"),
    }
    snap = snapshot(
        models,
        routing=with_history(PolicyMode.BALANCED),
        health={"openai-main": 0.95},
        history=history(entries, models=models),
    )
    smart_chat = config(criteria=CHAT_CRITERIA, cid="smart-chat")
    return decide(smart_chat, Operation.CHAT, CHAT, snap)


def test_readout_reproduces_the_spec_example() -> None:
    out = explain(_spec_example())
    top = out["candidates"][0]
    assert top["score"] == pytest.approx(0.80586, abs=5e-6)
    assert top["signals"]["latency"] == pytest.approx(0.59370, abs=5e-6)
    assert top["signals"]["callCost"] == pytest.approx(0.62366, abs=5e-6)
    top["score"] = round(top["score"], 5)
    top["signals"] = {k: v if v is None else round(v, 5) for k, v in top["signals"].items()}
    assert {k: v for k, v in out.items() if k != "candidates"} == {
        "configuration": "smart-chat",
        "fixed": False,
        "operation": "chat",
        "mode": "balanced",
        "modeOverridden": False,
        "callHistory": True,
        "costBasis": "measured",
        "selected": {"model": "gpt-4o-mini", "provider": "openai-main"},
        "rejected": [
            {
                "model": "text-embedding-3-small",
                "provider": "openai-main",
                "reason": "CAPABILITY_MISSING",
            }
        ],
        "signalsUsed": ["health", "latency", "callCost"],
        "decidedBy": "score",
        "outscoredBy": [],
        "exploration": None,
    }
    assert top == {
        "rank": 1,
        "model": "gpt-4o-mini",
        "provider": "openai-main",
        "adapterType": "openai",
        "priority": 50,
        "score": 0.80586,
        "signals": {
            "quality": None,
            "health": 0.95,
            "cost": None,
            "latency": 0.5937,
            "callCost": 0.62366,
        },
        "history": {
            "calls": 40,
            "meanLatencyMs": 4259.0,
            "latencyMs": 4259.0,
            "latencyStatistic": "mean",
            "latencyMeasure": "total",
            "totalMs": 4259.0,
            "ttftMs": None,
            "costedCalls": 40,
            "meanCost": 0.0067,
        },
        "warnings": [],
    }
    assert out["candidates"][1]["model"] == "gpt-4o"
    assert out["candidates"][1]["rank"] == 2


def test_readout_is_json_and_full_precision() -> None:
    decision = _spec_example()
    out = json.loads(json.dumps(explain(decision)))
    assert out["candidates"][0]["score"] == decision.candidates[0].score


def test_readout_fill_shows_null_and_sole_measured_shows_half() -> None:
    models = [model("serving"), model("new")]
    snap = snapshot(
        models,
        routing=with_history(),
        history=history({"serving": figures(9, 300.0)}, models=models),
    )
    out = explain(decide(config(), Operation.CHAT, CHAT, snap))
    by_model = {c["model"]: c for c in out["candidates"]}
    assert by_model["serving"]["signals"]["latency"] == 0.5
    assert by_model["new"]["signals"]["latency"] is None
    assert by_model["new"]["history"] == {
        "calls": 0,
        "meanLatencyMs": None,
        "latencyMs": None,
        "latencyStatistic": "mean",
        "latencyMeasure": "total",
        "totalMs": None,
        "ttftMs": None,
        "costedCalls": 0,
        "meanCost": None,
    }


def test_readout_history_is_raw_also_below_the_minimum() -> None:
    models = [model("a"), model("b")]
    snap = snapshot(
        models,
        routing=with_history(),
        history=history({"a": figures(3, 250.0, "0.001")}, models=models),
    )
    a = explain(decide(config(), Operation.CHAT, CHAT, snap))["candidates"][0]
    assert a["history"] == {
        "calls": 3,
        "meanLatencyMs": 250.0,
        "latencyMs": 250.0,
        "latencyStatistic": "mean",
        "latencyMeasure": "total",
        "totalMs": 250.0,
        "ttftMs": None,
        "costedCalls": 3,
        "meanCost": 0.001,
    }
    assert a["signals"]["latency"] is None


def test_readout_history_null_when_not_read_and_list_cost_under_cost() -> None:
    models = [model("a", price=price("0.1", "0.1"))]
    snap = snapshot(models, routing=RoutingSettings(policy_mode=PolicyMode.ECONOMY))
    out = explain(decide(config(), Operation.CHAT, CHAT, snap))
    assert out["callHistory"] is False
    assert out["costBasis"] == "list"
    candidate = out["candidates"][0]
    assert candidate["history"] is None
    assert candidate["signals"]["cost"] == pytest.approx(0.8)
    assert candidate["signals"]["callCost"] is None


def test_readout_mode_override_and_null_selection() -> None:
    snap = snapshot([model("emb", caps=[Capability.EMBEDDINGS])])
    decision = decide(config(), Operation.CHAT, CHAT, snap, mode_override=PolicyMode.QUALITY)
    out = explain(decision)
    assert out["mode"] == "quality"
    assert out["modeOverridden"] is True
    assert out["selected"] is None
    assert out["candidates"] == []
    assert out["rejected"][0]["reason"] == "OPERATION_CAPABILITY_MISSING"
    assert out["costBasis"] is None


def test_readout_shows_observe_warnings() -> None:
    routing = RoutingSettings(operation_capability_enforcement=Enforcement.OBSERVE)
    snap = snapshot([model("emb", caps=[Capability.EMBEDDINGS])], routing=routing)
    out = explain(decide(config(), Operation.CHAT, CHAT, snap))
    assert out["rejected"] == []
    assert out["candidates"][0]["warnings"][0].startswith("OPERATION_CAPABILITY_MISSING")


def test_explain_fixed_invents_nothing() -> None:
    fixed = Configuration(id="plain", mode=ConfigurationMode.FIXED, model="gpt-4o-mini")
    out = explain_fixed(fixed, model("gpt-4o-mini", "openai-main"), Operation.STREAM)
    assert out == {
        "configuration": "plain",
        "fixed": True,
        "operation": "stream",
        "mode": None,
        "modeOverridden": False,
        "callHistory": False,
        "costBasis": None,
        "selected": {"model": "gpt-4o-mini", "provider": "openai-main"},
        "candidates": [],
        "rejected": [],
        "signalsUsed": [],
        "decidedBy": None,
        "outscoredBy": [],
        "exploration": None,
    }


def test_table_shows_the_decision_and_its_blind_spot() -> None:
    models = [
        model("gpt-4o-mini", "openai-main", price=price("0.15", "0.60")),
        model("fresh", "openai-main", price=price("0.15", "0.60")),
        model("text-embedding-3-small", "openai-main", caps=[Capability.EMBEDDINGS]),
    ]
    snap = snapshot(
        models,
        routing=with_history(PolicyMode.BALANCED),
        health={"openai-main": 0.95},
        history=history({"gpt-4o-mini": figures(40, 4259.0, "0.0067")}, models=models),
    )
    table = render_table(
        explain(decide(config(criteria=CHAT_CRITERIA), Operation.CHAT, CHAT, snap))
    )
    assert "gpt-4o-mini" in table
    assert "no data" in table  # fresh has no history
    assert "CAPABILITY_MISSING" in table
    assert "0.95000" in table
    assert "circuit" in table.lower() and "running server" in table


def test_table_for_fixed_configuration() -> None:
    fixed = Configuration(id="plain", mode=ConfigurationMode.FIXED, model="m")
    table = render_table(explain_fixed(fixed, model("m", "p1"), Operation.CHAT))
    assert "fixed" in table and "m on p1" in table


def test_table_for_history_not_read_says_no_data() -> None:
    table = render_table(explain(decide(config(), Operation.CHAT, CHAT, snapshot([model("a")]))))
    assert "no data" in table
    assert "providerPriority" in table


def test_table_shows_a_fraction_of_a_cent_without_losing_it() -> None:
    models = [model("cheap", "p1", price=price("0.15", "0.60"))]
    snap = snapshot(
        models,
        routing=with_history(PolicyMode.BALANCED),
        history=history({"cheap": figures(6, 12.5, "0.0000034")}, models=models),
    )
    table = render_table(explain(decide(config(), Operation.CHAT, CHAT, snap)))
    assert "6 calls, mean 12.5 ms, $0.000003400 over 6" in table


def _two(
    a: dict[str, Any] | None = None,
    b: dict[str, Any] | None = None,
    *,
    priorities: tuple[int, int] = (50, 50),
    health: tuple[float, float] = (0.5, 0.5),
    criteria: Criteria | None = None,
) -> dict[str, Any]:
    """The balanced readout between model a on provider pa and model b on pb."""
    snap = snapshot(
        [model("a", "pa", **(a or {})), model("b", "pb", **(b or {}))],
        providers=[provider("pa", priority=priorities[0]), provider("pb", priority=priorities[1])],
        routing=RoutingSettings(policy_mode=PolicyMode.BALANCED),
        health={"pa": health[0], "pb": health[1]},
    )
    return explain(decide(config(criteria=criteria), Operation.CHAT, CHAT, snap))


def test_readout_says_when_provider_priority_decided_over_a_higher_score() -> None:
    readout = _two(priorities=(60, 50), health=(0.2, 0.9))
    assert readout["selected"] == {"model": "a", "provider": "pa"}
    assert readout["decidedBy"] == "priority"
    (rival,) = readout["outscoredBy"]
    assert (rival["model"], rival["provider"], rival["priority"]) == ("b", "pb", 50)
    assert rival["score"] > readout["candidates"][0]["score"]
    table = render_table(readout)
    assert "decided by: provider priority" in table
    assert "note: priority decided over score: b (pb, priority 50) scores 0.9" in table


def test_readout_names_what_separated_the_first_two() -> None:
    assert _two(health=(0.9, 0.2))["decidedBy"] == "score"
    assert _two()["decidedBy"] == "order"
    assert _two(b={"default": True})["decidedBy"] == "default"
    # Both list prices are above the ceiling: each scores 0 on cost, so the tiebreak decides.
    cheap_b = Criteria(prefer_lowest_cost=True)
    readout = _two({"price": price("2", "2")}, {"price": price("1", "1")}, criteria=cheap_b)
    assert (readout["decidedBy"], readout["selected"]) == ("cost", {"model": "b", "provider": "pb"})
    higher_priority_wins_on_score = _two(priorities=(60, 50), health=(0.9, 0.2))
    assert higher_priority_wins_on_score["decidedBy"] == "priority"
    assert higher_priority_wins_on_score["outscoredBy"] == []
    assert "note:" not in render_table(higher_priority_wins_on_score)


def test_readout_decided_by_a_sole_candidate_or_nothing() -> None:
    sole = explain(decide(config(), Operation.CHAT, CHAT, snapshot([model("a")])))
    assert sole["decidedBy"] == "onlyCandidate"
    assert "decided by: the only eligible candidate" in render_table(sole)
    refused = explain(
        decide(config(), Operation.CHAT, CHAT, snapshot([model("e", caps=[Capability.EMBEDDINGS])]))
    )
    assert refused["decidedBy"] is None and refused["outscoredBy"] == []
