"""routing.exploration through the pure decision: a bounded share of calls, only to eligible
candidates lacking history, never above the share, deterministic with a seeded source."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from gateway.domain.model import (
    Capability,
    Criteria,
    ExplorationSettings,
    Operation,
    PolicyMode,
)
from gateway.routing.decision import Decision
from gateway.routing.exploration import ExplorationCounts, explore, lacking_history
from gateway.routing.ranker import decide
from gateway.routing.readout import explain, render_table

from .builders import CHAT, config, figures, history, model, provider, snapshot, with_history

SHARE = ExplorationSettings(share=0.02, min_calls=5)


def _decision(*, history_read: bool = True, mode: PolicyMode = PolicyMode.BALANCED) -> Decision:
    """a (much history, ranked first), b and c (too few calls), d (ineligible: no chat),
    e (history enough)."""
    models = [
        model("a", "p-high"),
        model("b"),
        model("c"),
        model("d", caps=(Capability.EMBEDDINGS,)),
        model("e"),
    ]
    entries = {"a": figures(100, 50.0), "b": figures(2, 40.0), "e": figures(9, 400.0)}
    snap = snapshot(
        models,
        providers=[provider("p-high", priority=90), provider("p1")],
        routing=with_history(mode) if history_read else None,
        history=history(entries, models=models) if history_read else None,
    )
    decision = decide(config(mode, criteria=Criteria()), Operation.CHAT, CHAT, snap)
    assert decision.selected is not None and decision.selected.id == "a"
    return decision


def test_the_candidates_lacking_history_are_the_eligible_ones_below_min_calls() -> None:
    decision = _decision()
    assert [c.model.id for c in lacking_history(decision, 5)] == ["b", "c"]  # c: no calls
    assert [c.model.id for c in lacking_history(decision, 10)] == ["b", "c", "e"]
    assert "d" in {r.model.id for r in decision.rejected}


def test_ten_thousand_decisions_explore_close_to_the_share_and_never_above_it() -> None:
    decision = _decision()
    counts = ExplorationCounts()
    source = random.Random(20261202)
    sent: Counter[str] = Counter()
    for n in range(1, 10_001):
        chosen = explore(decision, SHARE, counts, source)
        sent[chosen.model.id if chosen is not None else "a"] += 1
        assert counts.explored <= SHARE.share * n  # at every moment, not only at the end
    assert counts.calls == 10_000
    explored = sent["b"] + sent["c"]
    assert explored == counts.explored
    assert 150 <= explored <= 200  # 2 % of 10,000 = 200 at most
    assert set(sent) == {"a", "b", "c"}  # never d (ineligible), never e (history enough)
    assert sent["b"] > 50 and sent["c"] > 50  # either may be drawn


def test_the_same_seed_gives_the_same_calls() -> None:
    decision = _decision()

    def run(seed: int) -> list[str | None]:
        counts, source = ExplorationCounts(), random.Random(seed)
        picks = (explore(decision, SHARE, counts, source) for _ in range(2000))
        return [c.model.id if c is not None else None for c in picks]

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_a_share_of_one_explores_every_call_while_a_candidate_lacks_history() -> None:
    decision = _decision()
    counts = ExplorationCounts()
    everything = ExplorationSettings(share=1.0, min_calls=5)
    picks = [explore(decision, everything, counts, random.Random(1)) for _ in range(20)]
    assert all(p is not None and p.model.id in {"b", "c"} for p in picks)


def test_calls_counted_while_nobody_lacks_history_allow_no_burst() -> None:
    """The cap counts every call, but each call still explores with probability share."""
    decision = _decision()
    counts = ExplorationCounts()
    source = random.Random(3)
    for _ in range(5000):  # minCalls 1 and c has 0 calls, so c lacks history; min 0: nobody
        explore(decision, ExplorationSettings(share=0.02, min_calls=0), counts, source)
    assert counts.explored == 0 and counts.calls == 5000  # the cap now allows 100
    only_c = ExplorationSettings(share=0.02, min_calls=1)
    assert [c.model.id for c in lacking_history(decision, 1)] == ["c"]
    burst = [explore(decision, only_c, counts, source) for _ in range(100)]
    assert sum(p is not None for p in burst) <= 10  # about 2 in 100, not 100


@pytest.mark.parametrize(
    ("history_on", "mode"),
    [(False, PolicyMode.BALANCED), (True, PolicyMode.PROVIDER_PRIORITY)],
    ids=["callHistory off", "providerPriority reads no history"],
)
def test_a_decision_that_read_no_history_explores_nothing(
    history_on: bool, mode: PolicyMode
) -> None:
    decision = _decision(history_read=history_on, mode=mode)
    assert decision.call_history is False
    counts = ExplorationCounts()
    assert lacking_history(decision, 5) == ()
    assert all(
        explore(decision, ExplorationSettings(1.0, 5), counts, random.Random(0)) is None
        for _ in range(100)
    )
    assert counts.calls == 100


def test_the_readout_names_the_setting_and_the_candidates() -> None:
    decision = _decision()
    shown = explain(decision, SHARE)
    assert shown["exploration"] == {
        "share": 0.02,
        "minCalls": 5,
        "candidates": [{"model": "b", "provider": "p1"}, {"model": "c", "provider": "p1"}],
    }
    assert explain(decision)["exploration"] is None
    table = render_table(shown)
    assert "exploration: up to 2.00% of calls may go to b (p1), c (p1): fewer than 5 calls" in table
    silent = render_table(explain(_decision(history_read=False), SHARE))
    assert (
        "exploration: up to 2.00% of calls; none now: this decision read no call history" in silent
    )
