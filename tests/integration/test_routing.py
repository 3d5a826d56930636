"""Criteria-mode routing through the real server (issue 3): the decision, its signals and
its readout, with failures injected at the fake upstream and the openai SDK as client."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import openai
import pytest

from gateway.cli import main as gateway_main
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, TEST_KEY, RunningGateway
from tests.support.routed import (
    MESSAGES,
    TOOLS,
    VISION_MESSAGES,
    Start,
    admin_get,
    candidate,
    explain,
    routed_gateways,
    routed_yaml,
)

# a and b: two models on two providers of equal priority. e is refused by any chat criteria,
# plain lacks tools (a tools call refuses it as OPERATION_CAPABILITY_MISSING), old is inactive.
MODELS = """
  - {id: a, provider: p-a, name: model-a, capabilities: [chat, tools], contextLength: 8000,
     price: {input: 0.30, output: 0.40}}
  - {id: b, provider: p-b, name: model-b, capabilities: [chat, tools], contextLength: 128000,
     price: {input: 0.10, output: 0.20}}
  - {id: e, provider: p-b, name: embed-e, capabilities: [embeddings],
     price: {input: 0.02, output: 0}}
  - {id: plain, provider: p-a, name: model-plain, capabilities: [chat]}
  - {id: old, provider: p-a, name: model-old, capabilities: [chat, tools], active: false}
"""
CONFIGURATIONS = """
  - {id: only-a, mode: fixed, model: a}
  - {id: only-b, mode: fixed, model: b}
  - {id: a-then-b, mode: fixed, model: a, fallback: [only-b]}
  - {id: tools-pool, mode: criteria, criteria: {capabilities: [chat, tools]}, fallback: [long-pool]}
  - {id: long-pool, mode: criteria, criteria: {capabilities: [chat], minContextLength: 100000}}
  - {id: cheap, mode: criteria, criteria: {capabilities: [chat], preferLowestCost: true}}
  - {id: any-pool, mode: criteria}
  - {id: vision-first, mode: criteria, criteria: {capabilities: [chat, vision]}, fallback: [only-a]}
  - {id: by-quality, mode: criteria, policyMode: quality, criteria: {capabilities: [chat, tools]}}
"""


@pytest.fixture
def start(upstream: FakeUpstream, sqlite_url: str) -> Iterator[Start]:
    settings = {"models": MODELS, "configurations": CONFIGURATIONS}
    with routed_gateways(upstream.url, sqlite_url, **settings) as starting:
        yield starting


@pytest.fixture
def gateway(start: Start) -> RunningGateway:
    return start()


def _expected_health(rows: list[dict[str, object]], provider: str) -> float:
    """docs/routing.md#health over the provider's first-attempt rows, recomputed here."""
    mine = [r for r in rows if r["provider"] == provider]
    ok = [r for r in mine if r["success"] == 1 and r["fallback_attempts"] == 0]
    latencies = [float(str(r["latency_ms"])) for r in mine if r["fallback_attempts"] == 0]
    latency = sum(latencies) / len(latencies)
    return 0.8 * len(ok) / len(mine) + 0.2 * (1 - min(1.0, latency / 5000))


def test_failures_at_the_upstream_lower_health_and_move_the_decision(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    assert explain(gateway, "tools-pool", "chat")["selected"]["model"] == "a"  # config order
    upstream.behave("model-a", fail_always=500)
    client = gateway.client()
    for _ in range(3):
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="only-a", messages=MESSAGES)
        client.chat.completions.create(model="only-b", messages=MESSAGES)
    gateway.refresh_signals()
    rows = gateway.rows()

    readout = explain(gateway, "tools-pool", "chat")
    assert readout["selected"] == {"model": "b", "provider": "p-b"}
    assert readout["signalsUsed"] == ["health"]
    health_a = candidate(readout, "a")["signals"]["health"]
    health_b = candidate(readout, "b")["signals"]["health"]
    assert health_a == pytest.approx(_expected_health(rows, "p-a"), abs=1e-9)
    assert health_b == pytest.approx(_expected_health(rows, "p-b"), abs=1e-9)
    assert health_a < 0.2 < 0.99 < health_b

    raw = client.chat.completions.with_raw_response.create(model="tools-pool", messages=MESSAGES)
    assert raw.headers["x-gateway-model"] == readout["selected"]["model"]
    assert upstream.received[-1].body["model"] == "model-b"
    row = gateway.rows()[-1]
    assert row["served_model"] == readout["selected"]["model"]
    assert (row["routing_policy_mode"], row["routing_signal_health"]) == ("balanced", 1)


def test_a_routed_row_carries_the_routing_columns_and_the_resolved_models_exact_cost(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("model-b", prompt_tokens=1000, completion_tokens=500)
    readout = explain(gateway, "cheap", "tools")
    assert readout["costBasis"] == "list"
    assert [(c["model"], c["signals"]["cost"]) for c in readout["candidates"]] == [
        ("b", pytest.approx(0.7)),  # 1 − (0.10 + 0.20) / 1.00
        ("a", pytest.approx(0.3)),
    ]
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="cheap", messages=MESSAGES, tools=TOOLS
    )
    assert raw.headers["x-gateway-model"] == readout["selected"]["model"] == "b"
    assert raw.headers["x-gateway-cost-usd"] == "0.0002"  # 1000·0.10/1M + 500·0.20/1M
    assert upstream.received[-1].body["model"] == "model-b"

    (row,) = gateway.rows()
    assert row["operation"] == "tools"
    assert (row["provider"], row["model"], row["served_model"]) == ("p-b", "b", "b")
    assert row["routing_policy_mode"] == "balanced"
    assert row["routing_candidates"] == 4  # a, b, e, plain: the inactive model is no candidate
    assert row["routing_rejections"] == "CAPABILITY_MISSING,OPERATION_CAPABILITY_MISSING"
    assert row["routing_cost_basis"] == "list"
    flags = [row[f"routing_signal_{name}"] for name in ("quality", "health", "cost", "latency")] + [
        row["routing_signal_call_cost"]
    ]
    assert flags == [0, 0, 1, 0, 0]
    assert row["actual_cost"] == Decimal("0.0002")
    (daily,) = gateway.usage_daily()
    assert (daily["model"], daily["cost"]) == ("b", Decimal("0.0002"))


def test_a_fixed_mode_call_records_no_policy_mode(gateway: RunningGateway) -> None:
    gateway.client().chat.completions.create(model="only-a", messages=MESSAGES)
    (row,) = gateway.rows()
    assert row["routing_policy_mode"] == "" and row["routing_candidates"] == 0
    assert row["routing_rejections"] == "" and row["routing_cost_basis"] == ""
    assert row["routing_signal_health"] == 0 and row["routing_signal_cost"] == 0


def test_a_criteria_fallback_takes_its_own_decision_and_is_recorded_as_served(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("model-a", fail_always=503)
    upstream.behave("model-b", prompt_tokens=100, completion_tokens=100)
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="tools-pool", messages=MESSAGES
    )
    # tools-pool chose a (config order); a failed; long-pool refuses a (context 8000) and
    # so chose b by its own decision.
    assert raw.headers["x-gateway-model"] == "b"
    assert raw.headers["x-gateway-configuration"] == "long-pool"
    assert [r.body["model"] for r in upstream.received] == ["model-a", "model-b"]
    (row,) = gateway.rows()
    assert (row["provider"], row["model"]) == ("p-a", "a")
    assert (row["served_configuration"], row["served_provider"], row["served_model"]) == (
        "long-pool",
        "p-b",
        "b",
    )
    assert row["fallback_attempts"] == 1 and row["success"] == 1
    assert row["routing_policy_mode"] == "balanced"
    assert row["actual_cost"] == Decimal("0.00003")  # priced by b: 100·0.10/1M + 100·0.20/1M


def test_nothing_eligible_for_want_of_the_operations_capability_is_400(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().chat.completions.create(model="any-pool", messages=VISION_MESSAGES)
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "no_eligible_model"
    assert "any-pool" in error["message"] and "OPERATION_CAPABILITY_MISSING" in error["message"]
    assert upstream.received == []
    (row,) = gateway.rows()
    assert (row["http_status"], row["error_class"]) == (400, "no_eligible_model")
    assert row["routing_rejections"] == "OPERATION_CAPABILITY_MISSING"


def test_nothing_eligible_for_any_other_reason_is_503(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(openai.InternalServerError) as caught:
        gateway.client().chat.completions.create(model="cheap", messages=VISION_MESSAGES)
    assert caught.value.status_code == 503
    error = caught.value.body
    assert isinstance(error, dict) and error["code"] == "no_eligible_model"
    message = error["message"]
    assert "cheap" in message
    assert "CAPABILITY_MISSING" in message and "OPERATION_CAPABILITY_MISSING" in message
    assert upstream.received == []


def test_nothing_eligible_with_a_fallback_is_answered_by_the_fallback(
    gateway: RunningGateway,
) -> None:
    readout = explain(gateway, "vision-first", "chat")
    assert readout["selected"] is None and readout["candidates"] == []
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="vision-first", messages=MESSAGES
    )
    assert raw.headers["x-gateway-model"] == "a"
    (row,) = gateway.rows()
    assert row["success"] == 1 and row["fallback_attempts"] == 1
    assert (row["served_configuration"], row["served_model"]) == ("only-a", "a")
    assert row["routing_rejections"] == "CAPABILITY_MISSING"


def test_an_open_circuit_refuses_the_provider_and_sends_a_fixed_call_to_its_fallback(
    start: Start, upstream: FakeUpstream
) -> None:
    gateway = start(circuit_breaker="{failureThreshold: 2, cooldownSeconds: 30}")
    upstream.behave("model-a", fail_always=500)
    client = gateway.client()
    for _ in range(2):
        with pytest.raises(openai.APIStatusError):
            client.chat.completions.create(model="only-a", messages=MESSAGES)

    readout = explain(gateway, "tools-pool", "chat")
    assert {"model": "a", "provider": "p-a", "reason": "PROVIDER_UNAVAILABLE"} in readout[
        "rejected"
    ]
    assert readout["selected"] == {"model": "b", "provider": "p-b"}

    raw = client.chat.completions.with_raw_response.create(model="a-then-b", messages=MESSAGES)
    assert raw.headers["x-gateway-model"] == "b"
    assert upstream.calls["model-a"] == 2  # straight to the fallback: a was not tried again
    row = gateway.rows()[-1]
    assert (row["provider"], row["served_model"], row["fallback_attempts"]) == ("p-b", "b", 1)

    client.chat.completions.create(model="tools-pool", messages=MESSAGES)
    routed = gateway.rows()[-1]
    assert routed["served_model"] == "b"
    assert routed["routing_rejections"] == "CAPABILITY_MISSING,PROVIDER_UNAVAILABLE"


def test_observe_mode_warns_instead_of_refusing_a_missing_operation_capability(
    start: Start,
) -> None:
    gateway = start(routing="{policyMode: balanced, operationCapabilityEnforcement: observe}")
    readout = explain(gateway, "any-pool", "vision")
    assert readout["rejected"] == []
    assert [c["model"] for c in readout["candidates"]] == ["a", "b", "e", "plain"]
    for entry in readout["candidates"]:
        (warning,) = entry["warnings"]
        assert warning.startswith("OPERATION_CAPABILITY_MISSING")
        assert "vision" in warning

    raw = gateway.client().chat.completions.with_raw_response.create(
        model="any-pool", messages=VISION_MESSAGES
    )
    assert raw.headers["x-gateway-model"] == readout["selected"]["model"]
    assert gateway.rows()[-1]["routing_rejections"] == ""


def test_explain_refuses_unknown_names_and_callers_without_the_admin_key(
    gateway: RunningGateway,
) -> None:
    def status(key: str | None = ENVIRON["ADMIN_KEY"], **params: str) -> int:
        return admin_get(gateway, "/admin/routing/explain", key, **params).status_code

    assert status(configuration="nope", operation="chat") == 404
    assert status(configuration="cheap", operation="dance") == 400
    assert status(configuration="cheap", operation="chat", mode="random") == 400
    assert status(configuration="cheap") == 400
    assert status(None, configuration="cheap", operation="chat") == 401
    assert status(TEST_KEY, configuration="cheap", operation="chat") == 401
    body = admin_get(gateway, "/admin/routing/explain", configuration="cheap", operation="dance")
    assert "dance" in body.json()["error"]["message"]


def test_explain_a_fixed_configuration_invents_nothing(gateway: RunningGateway) -> None:
    assert explain(gateway, "only-b", "chat") == {
        "configuration": "only-b",
        "fixed": True,
        "operation": "chat",
        "mode": None,
        "modeOverridden": False,
        "callHistory": False,
        "costBasis": None,
        "selected": {"model": "b", "provider": "p-b"},
        "candidates": [],
        "rejected": [],
        "signalsUsed": [],
        "decidedBy": None,
        "outscoredBy": [],
        "exploration": None,
    }


def test_explain_mode_override_is_reported(gateway: RunningGateway) -> None:
    readout = explain(gateway, "cheap", "chat", mode="economy")
    assert (readout["mode"], readout["modeOverridden"]) == ("economy", True)
    assert explain(gateway, "cheap", "chat")["modeOverridden"] is False


CALL_KEYS = {
    "createdAt",
    "operation",
    "configuration",
    "servedModel",
    "upstreamModel",
    "upstreamModelDiffers",
    "latencyMs",
    "ttftMs",
    "outputTokensPerSecond",
    "success",
    "fallbackAttempts",
    "explored",
    "mode",
    "candidates",
    "rejections",
    "costBasis",
    "signalsUsed",
}


def test_recent_routed_calls_are_listed_newest_first(gateway: RunningGateway) -> None:
    client = gateway.client()
    client.chat.completions.create(model="tools-pool", messages=MESSAGES)
    client.chat.completions.create(model="cheap", messages=MESSAGES, tools=TOOLS)
    client.chat.completions.create(model="only-a", messages=MESSAGES)  # fixed: not listed
    client.chat.completions.create(model="cheap", messages=MESSAGES)
    gateway.flush()

    response = admin_get(gateway, "/admin/routing/calls", days="7", limit="20")
    assert response.status_code == 200
    calls = response.json()["calls"]
    assert [(c["configuration"], c["operation"]) for c in calls] == [
        ("cheap", "chat"),
        ("cheap", "tools"),
        ("tools-pool", "chat"),
    ]
    assert all(set(c) == CALL_KEYS for c in calls)
    assert [c["createdAt"] for c in calls] == sorted((c["createdAt"] for c in calls), reverse=True)
    newest = calls[0]
    assert newest["createdAt"].endswith("Z")
    assert (newest["servedModel"], newest["success"], newest["mode"]) == ("b", True, "balanced")
    assert (newest["candidates"], newest["costBasis"]) == (4, "list")
    assert newest["rejections"] == ["CAPABILITY_MISSING"]
    assert newest["signalsUsed"] == ["cost"]

    limited = admin_get(gateway, "/admin/routing/calls", days="7", limit="2").json()["calls"]
    assert limited == calls[:2]


@pytest.mark.parametrize(
    "params",
    [{"days": "0"}, {"days": "x"}, {"limit": "0"}, {"limit": "1001"}, {"limit": "2.5"}],
)
def test_recent_routed_calls_refuse_a_bad_days_or_limit(
    gateway: RunningGateway, params: dict[str, str]
) -> None:
    assert admin_get(gateway, "/admin/routing/calls", **params).status_code == 400
    assert admin_get(gateway, "/admin/routing/calls", key=None).status_code == 401


def test_eval_import_moves_a_quality_mode_decision(
    upstream: FakeUpstream,
    sqlite_url: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    yaml_text = routed_yaml(upstream.url, sqlite_url, models=MODELS, configurations=CONFIGURATIONS)
    gateway = RunningGateway(yaml_text)
    try:
        before = explain(gateway, "by-quality", "chat")
        assert before["selected"]["model"] == "a" and before["signalsUsed"] == []

        for name, value in ENVIRON.items():
            monkeypatch.setenv(name, value)
        config_file = tmp_path / "gateway.yaml"
        config_file.write_text(yaml_text, encoding="utf-8")
        results = tmp_path / "evals.jsonl"
        lines = [
            {"set_id": "s1", "provider": "p-a", "model": "a", "prompt_count": 10,
             "passed_count": 2, "mean_score": 0.2},
            {"set_id": "s1", "provider": "p-b", "model": "b", "prompt_count": 10,
             "passed_count": 9, "mean_score": 0.9},
        ]  # fmt: skip
        results.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
        assert gateway_main(["eval", "import", str(results), "--config", str(config_file)]) == 0

        gateway.refresh_signals()
        after = explain(gateway, "by-quality", "chat")
        assert after["selected"]["model"] == "b" and after["signalsUsed"] == ["quality"]
        assert candidate(after, "b")["signals"]["quality"] == pytest.approx(0.9)
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="by-quality", messages=MESSAGES
        )
        assert raw.headers["x-gateway-model"] == "b"
        row = gateway.rows()[-1]
        assert (row["routing_policy_mode"], row["routing_signal_quality"]) == ("quality", 1)
    finally:
        gateway.stop()
