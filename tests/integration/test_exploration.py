"""routing.exploration through the real server and the openai SDK: calls go to the eligible
candidate lacking history (never the ineligible one), rows say routing_explored = 1, the
readout names the candidates, and the explored calls' measurements count in the history."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.routed import MESSAGES, admin_get, candidate, explain, routed_yaml

MODELS = """
  - {id: a, provider: p-a, name: model-a, capabilities: [chat], price: {input: 0.15, output: 0.60}}
  - {id: b, provider: p-b, name: model-b, capabilities: [chat], price: {input: 0.30, output: 1.20}}
  - {id: e, provider: p-b, name: embed-e, capabilities: [embeddings]}
"""
CONFIGURATIONS = """
  - {id: only-a, mode: fixed, model: a}
  - {id: routed, mode: criteria, criteria: {capabilities: []}}
"""


def _yaml(upstream: FakeUpstream, url: str, exploration: str) -> str:
    text = routed_yaml(
        upstream.url,
        url,
        models=MODELS,
        configurations=CONFIGURATIONS,
        routing=f"{{policyMode: balanced, callHistory: true{exploration}}}",
    )
    # p-a outranks p-b on priority: without exploration, `routed` always serves a.
    return text.replace('apiKey: "sk-upstream-p-a",', 'apiKey: "sk-upstream-p-a", priority: 90,')


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(_yaml(upstream, sqlite_url, ", exploration: {share: 1, minCalls: 3}"))
    yield running
    running.stop()


def _served(gateway: RunningGateway, configuration: str) -> str:
    raw = gateway.client().chat.completions.with_raw_response.create(
        model=configuration, messages=MESSAGES
    )
    return raw.headers["x-gateway-model"]


def test_calls_explore_the_candidate_lacking_history_until_it_has_min_calls(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    for _ in range(5):
        _served(gateway, "only-a")
    gateway.refresh_signals()
    readout = explain(gateway, "routed", "chat")
    assert readout["selected"]["model"] == "a"
    assert readout["exploration"] == {
        "share": 1.0,
        "minCalls": 3,
        "candidates": [{"model": "b", "provider": "p-b"}],
    }

    assert [_served(gateway, "routed") for _ in range(3)] == ["b", "b", "b"]
    rows = gateway.rows(expect=8)
    routed = [r for r in rows if r["configuration"] == "routed"]
    assert [(r["served_model"], r["routing_explored"]) for r in routed] == [("b", 1)] * 3
    assert all(r["routing_explored"] == 0 for r in rows if r["configuration"] == "only-a")
    assert all(r["actual_cost"] is not None for r in routed)  # priced like any call
    calls = admin_get(gateway, "/admin/routing/calls").json()["calls"]
    assert [c["explored"] for c in calls] == [True, True, True]

    # The explored calls count in the history: b now has its 3 calls and is not explored.
    gateway.refresh_signals()
    readout = explain(gateway, "routed", "chat")
    assert candidate(readout, "b")["history"]["calls"] == 3
    assert readout["exploration"]["candidates"] == []
    assert _served(gateway, "routed") == "a"
    last = gateway.rows(expect=9)[-1]
    assert (last["served_model"], last["routing_explored"]) == ("a", 0)
    assert upstream.calls["embed-e"] == 0  # the ineligible model is never explored


def test_without_exploration_the_first_ranked_serves_and_nothing_is_flagged(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    running = RunningGateway(_yaml(upstream, sqlite_url, ""))
    try:
        assert [_served(running, "routed") for _ in range(3)] == ["a", "a", "a"]
        assert [r["routing_explored"] for r in running.rows(expect=3)] == [0, 0, 0]
        assert explain(running, "routed", "chat")["exploration"] is None
    finally:
        running.stop()
