"""Runtime.reload in a real server: the next call is served by the new configuration, a
call under way finishes on the old one, the upstream connection pool is kept, and
routing.callHistory switched takes effect on the next decision."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from gateway.config.loader import load_config_text
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, RunningGateway, gateway_yaml
from tests.support.routed import MESSAGES, admin_get, explain

LARGE = """
  - {id: large, provider: fake, name: large-model, capabilities: [chat],
     price: {input: 3.00, output: 15.00}}
"""
ROUTED = """
  - {id: routed, mode: criteria, criteria: {capabilities: [chat]}}
"""


def _yaml(
    upstream: FakeUpstream, url: str, *, chat_model: str = "small", history: bool = False
) -> str:
    text = gateway_yaml(
        upstream.url,
        url,
        models=LARGE,
        configurations=ROUTED,
        routing=f"{{policyMode: balanced, callHistory: {str(history).lower()}}}",
    )
    return text.replace(
        "{id: chat, mode: fixed, model: small}", f"{{id: chat, mode: fixed, model: {chat_model}}}"
    )


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(_yaml(upstream, sqlite_url))
    yield running
    running.stop()


def _reload(gateway: RunningGateway, text: str) -> Any:
    config = load_config_text(text, ENVIRON)
    return gateway.server.run(gateway.runtime.reload(config, "sha256:test"))


def _served(gateway: RunningGateway) -> str:
    raw = gateway.client().chat.completions.with_raw_response.create(
        model="chat", messages=MESSAGES
    )
    return raw.headers["x-gateway-model"]


def test_the_next_call_is_served_by_the_new_configuration_and_the_pool_is_kept(
    gateway: RunningGateway, upstream: FakeUpstream, sqlite_url: str
) -> None:
    assert _served(gateway) == "small"
    http = gateway.runtime.http
    served = _reload(gateway, _yaml(upstream, sqlite_url, chat_model="large"))
    assert served.version.generation == 2 and served.version.digest == "sha256:test"
    assert _served(gateway) == "large"
    assert gateway.runtime.http is http
    first, second = upstream.received
    assert (first.body["model"], second.body["model"]) == ("small-model", "large-model")
    assert first.peer is not None and first.peer == second.peer  # the same connection
    version = admin_get(gateway, "/admin/config/version").json()
    assert version["generation"] == 2 and version["hash"] == "sha256:test"


def test_a_call_under_way_finishes_on_the_configuration_it_started_on(
    gateway: RunningGateway, upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("small-model", latency_ms=1500)
    answers: list[str] = []
    slow = threading.Thread(target=lambda: answers.append(_served(gateway)))
    slow.start()
    deadline = threading.Event()
    for _ in range(200):
        if upstream.calls["small-model"]:
            break
        deadline.wait(0.02)
    assert upstream.calls["small-model"] == 1  # the call is at the upstream now
    _reload(gateway, _yaml(upstream, sqlite_url, chat_model="large"))
    assert _served(gateway) == "large"  # a new call takes the new configuration
    slow.join(timeout=20)
    assert answers == ["small"]
    rows = gateway.rows(expect=2)
    assert sorted(r["served_model"] for r in rows) == ["large", "small"]


def test_call_history_switched_takes_effect_on_the_next_decision(
    gateway: RunningGateway, upstream: FakeUpstream, sqlite_url: str
) -> None:
    assert explain(gateway, "routed", "chat")["callHistory"] is False
    _reload(gateway, _yaml(upstream, sqlite_url, history=True))
    readout = explain(gateway, "routed", "chat")
    assert readout["callHistory"] is True
    assert all(c["history"] is not None for c in readout["candidates"])
    _reload(gateway, _yaml(upstream, sqlite_url, history=False))
    assert explain(gateway, "routed", "chat")["callHistory"] is False
