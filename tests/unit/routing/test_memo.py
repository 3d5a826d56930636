"""DecisionMemo: the same decision on unchanged inputs, a fresh one when any input changes."""

from __future__ import annotations

from dataclasses import replace

from gateway.domain.model import Configuration, Operation, PolicyMode
from gateway.routing.decision import Decision
from gateway.routing.memo import DecisionMemo
from gateway.routing.ranker import decide as pure_decide
from gateway.routing.snapshot import Snapshot

from .builders import CHAT, config, figures, history, model, snapshot, with_history


def _inputs() -> tuple[Configuration, Snapshot]:
    models = [model("a", "pa"), model("b", "pb")]
    snap = snapshot(
        models,
        routing=with_history(PolicyMode.BALANCED),
        health={"pa": 0.9, "pb": 0.5},
        history=history({"a": figures(10, 100.0), "b": figures(10, 900.0)}, models=models),
    )
    return config(), snap


def _memo() -> DecisionMemo:
    return DecisionMemo()


def _selected(decision: Decision) -> str | None:
    return decision.selected.id if decision.selected else None


def test_same_inputs_return_the_same_decision() -> None:
    cfg, snap = _inputs()
    decide = _memo().decide
    first = decide(cfg, Operation.CHAT, CHAT, snap)
    # A per-call snapshot with the same parts and an equal (new) circuit set still hits.
    again = decide(cfg, Operation.CHAT, CHAT, replace(snap, open_circuits=frozenset()))
    assert again is first


def test_changed_circuits_take_a_fresh_decision() -> None:
    cfg, snap = _inputs()
    decide = _memo().decide
    assert _selected(decide(cfg, Operation.CHAT, CHAT, snap)) == "a"
    opened = decide(cfg, Operation.CHAT, CHAT, replace(snap, open_circuits=frozenset({"pa"})))
    assert _selected(opened) == "b"
    assert [r.reason.value for r in opened.rejected] == ["PROVIDER_UNAVAILABLE"]


def test_refreshed_health_takes_a_fresh_decision() -> None:
    cfg, snap = _inputs()
    decide = _memo().decide
    assert _selected(decide(cfg, Operation.CHAT, CHAT, snap)) == "a"
    refreshed = replace(snap, health={"pa": 0.1, "pb": 0.9})
    assert _selected(decide(cfg, Operation.CHAT, CHAT, refreshed)) == "b"


def test_operation_and_mode_are_part_of_the_memo_key() -> None:
    cfg, snap = _inputs()
    decide = _memo().decide
    chat = decide(cfg, Operation.CHAT, CHAT, snap)
    stream = decide(cfg, Operation.STREAM, CHAT, snap)
    assert stream is not chat
    assert stream.signals_used != chat.signals_used  # the stream history is empty
    overridden = decide(cfg, Operation.CHAT, CHAT, snap, mode_override=PolicyMode.ECONOMY)
    assert overridden.mode is PolicyMode.ECONOMY and overridden is not chat


def test_decide_itself_keeps_no_state() -> None:
    cfg, snap = _inputs()
    first = pure_decide(cfg, Operation.CHAT, CHAT, snap)
    again = pure_decide(cfg, Operation.CHAT, CHAT, snap)
    assert again is not first and again == first
