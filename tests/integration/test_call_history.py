"""The call history through the real server (docs/routing.md#call-history): traffic at
the fake upstream builds it, the readout's latency and callCost equal what this test
recomputes from the telemetry rows, and the next routed call follows the readout."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.routed import (
    EACH_ALONE,
    MESSAGES,
    TWO_MODELS,
    Start,
    candidate,
    explain,
    history_population,
    mean_cost,
    mean_latency,
    mean_ttft,
    relative,
    routed_gateways,
)

# "routed" decides between the two models that only-a and only-b send traffic to.
CONFIGURATIONS = (
    EACH_ALONE
    + "  - {id: routed, mode: criteria, criteria: {capabilities: [chat], preferLowestCost: true}}"
)
HISTORY_ON = "{policyMode: balanced, callHistory: true}"
HISTORY_OFF = "{policyMode: balanced, callHistory: false}"


@pytest.fixture
def start(upstream: FakeUpstream, sqlite_url: str) -> Iterator[Start]:
    settings = {"models": TWO_MODELS, "configurations": CONFIGURATIONS}
    with routed_gateways(upstream.url, sqlite_url, **settings) as starting:
        yield starting


def _a_slow_and_dear_per_call(upstream: FakeUpstream) -> None:
    # a: cheaper per token but 1500 tokens a call (0.00045 USD), and slow;
    # b: dearer per token but 300 tokens a call (0.00018 USD), and fast.
    upstream.behave("model-a", latency_ms=60, prompt_tokens=1000, completion_tokens=500)
    upstream.behave("model-b", latency_ms=5, prompt_tokens=200, completion_tokens=100)


def _traffic(gateway: RunningGateway, calls: int, *, stream: bool = False) -> None:
    """``calls`` calls to each model, returning once every one of their rows is written: a
    stream's row is recorded as its relay ends, which can be after the client has read
    the last event, so a history read at once could miss the last one (and disagree with
    the rows read after it)."""
    before = len(gateway.rows())
    client = gateway.client()
    for _ in range(calls):
        for configuration in ("only-a", "only-b"):
            if stream:
                list(
                    client.chat.completions.create(
                        model=configuration, messages=MESSAGES, stream=True
                    )
                )
            else:
                client.chat.completions.create(model=configuration, messages=MESSAGES)
    assert len(gateway.rows(expect=before + 2 * calls)) == before + 2 * calls


def _expected_scores(
    rows: list[dict[str, Any]], operation: str
) -> tuple[dict[str, float], dict[str, float], dict[str, list[dict[str, Any]]]]:
    population = history_population(rows, operation)
    measure = mean_ttft if operation == "stream" else mean_latency  # streamLatency: ttft
    latencies = {model: measure(found) for model, found in population.items()}
    costs = {model: mean_cost(found) for model, found in population.items()}
    return relative(latencies), relative(costs), population


def test_the_readout_equals_the_history_recomputed_from_telemetry_and_the_call_follows_it(
    start: Start, upstream: FakeUpstream
) -> None:
    gateway = start(routing=HISTORY_ON)
    _a_slow_and_dear_per_call(upstream)
    _traffic(gateway, 5)
    gateway.refresh_signals()
    latency, call_cost, population = _expected_scores(gateway.rows(), "chat")
    assert sorted(population) == ["a", "b"] and all(len(r) == 5 for r in population.values())

    readout = explain(gateway, "routed", "chat")
    assert (readout["callHistory"], readout["costBasis"]) == (True, "measured")
    for model in ("a", "b"):
        entry = candidate(readout, model)
        assert entry["signals"]["latency"] == pytest.approx(latency[model], abs=1e-9)
        assert entry["signals"]["callCost"] == pytest.approx(call_cost[model], abs=1e-9)
        assert entry["signals"]["cost"] is None  # on the measured basis the cost is callCost
        history = entry["history"]
        assert (history["calls"], history["costedCalls"]) == (5, 5)
        assert history["meanLatencyMs"] == pytest.approx(mean_latency(population[model]))
        assert history["meanCost"] == pytest.approx(mean_cost(population[model]), abs=1e-12)
    assert readout["selected"]["model"] == "b"
    assert readout["signalsUsed"] == ["health", "latency", "callCost"]

    raw = gateway.client().chat.completions.with_raw_response.create(
        model="routed", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == readout["selected"]["model"]
    row = gateway.rows()[-1]
    assert row["served_model"] == readout["selected"]["model"]
    assert (row["routing_signal_latency"], row["routing_signal_call_cost"]) == (1, 1)
    assert row["routing_cost_basis"] == "measured"


def test_each_operation_selects_its_own_history(start: Start, upstream: FakeUpstream) -> None:
    gateway = start(routing=HISTORY_ON)
    _a_slow_and_dear_per_call(upstream)
    _traffic(gateway, 5)
    gateway.refresh_signals()
    chat_before = explain(gateway, "routed", "chat")

    # Streams with the ranking reversed: a is now fast and cheap per call, b slow and dear.
    upstream.behave("model-a", latency_ms=5, prompt_tokens=200, completion_tokens=100)
    upstream.behave("model-b", latency_ms=60, prompt_tokens=1000, completion_tokens=500)
    _traffic(gateway, 5, stream=True)
    gateway.refresh_signals()
    rows = gateway.rows()

    stream = explain(gateway, "routed", "stream")
    stream_latency, stream_cost, _ = _expected_scores(rows, "stream")
    assert stream["selected"]["model"] == "a"
    assert candidate(stream, "a")["history"]["latencyMeasure"] == "ttft"
    assert candidate(stream, "a")["signals"]["latency"] == pytest.approx(
        stream_latency["a"], abs=1e-9
    )
    assert candidate(stream, "a")["signals"]["callCost"] == pytest.approx(
        stream_cost["a"], abs=1e-9
    )

    chat = explain(gateway, "routed", "chat")
    chat_latency, chat_cost, _ = _expected_scores(rows, "chat")
    assert chat["selected"] == chat_before["selected"] == {"model": "b", "provider": "p-b"}
    for model in ("a", "b"):
        signals = candidate(chat, model)["signals"]
        assert signals["latency"] == pytest.approx(chat_latency[model], abs=1e-9)
        assert signals["callCost"] == pytest.approx(chat_cost[model], abs=1e-9)
        assert signals["latency"] == candidate(chat_before, model)["signals"]["latency"]
        assert candidate(chat, model)["history"]["calls"] == 5
    gateway.client().chat.completions.create(model="routed", messages=MESSAGES)
    assert gateway.rows()[-1]["served_model"] == "b"


def test_call_history_off_reads_nothing_and_flags_nothing(
    start: Start, upstream: FakeUpstream
) -> None:
    gateway = start(routing=HISTORY_OFF)
    _a_slow_and_dear_per_call(upstream)
    _traffic(gateway, 5)
    gateway.refresh_signals()

    readout = explain(gateway, "routed", "chat")
    assert (readout["callHistory"], readout["costBasis"]) == (False, "list")
    for entry in readout["candidates"]:
        assert entry["signals"]["latency"] is None and entry["signals"]["callCost"] is None
        assert entry["history"] is None
    assert "latency" not in readout["signalsUsed"] and "callCost" not in readout["signalsUsed"]

    gateway.client().chat.completions.create(model="routed", messages=MESSAGES)
    row = gateway.rows()[-1]
    assert row["served_model"] == readout["selected"]["model"]
    assert (row["routing_signal_latency"], row["routing_signal_call_cost"]) == (0, 0)
    assert row["routing_cost_basis"] == "list"


def test_four_calls_give_no_figure_and_five_do(start: Start, upstream: FakeUpstream) -> None:
    gateway = start(routing=HISTORY_ON)
    _a_slow_and_dear_per_call(upstream)
    _traffic(gateway, 4)
    gateway.refresh_signals()
    four = explain(gateway, "routed", "chat")
    assert four["callHistory"] is True
    assert four["costBasis"] == "list"  # no measured figure yet: the list basis
    for entry in four["candidates"]:
        assert entry["history"]["calls"] == 4
        assert entry["signals"]["latency"] is None and entry["signals"]["callCost"] is None

    _traffic(gateway, 1)
    gateway.refresh_signals()
    five = explain(gateway, "routed", "chat")
    assert five["costBasis"] == "measured"
    for entry in five["candidates"]:
        assert entry["history"]["calls"] == 5
        assert isinstance(entry["signals"]["latency"], float)
        assert isinstance(entry["signals"]["callCost"], float)
