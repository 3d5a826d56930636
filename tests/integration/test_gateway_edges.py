"""Edges of the proxy: body limits, telemetry off, a database outage, Azure, secrets in logs."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from decimal import Decimal

import httpx
import openai
import pytest
from sqlalchemy import text

from gateway.db.engine import create_engine
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, TEST_KEY, RunningGateway, gateway_yaml

MESSAGES = [{"role": "user", "content": "Say hello."}]


def test_a_body_over_the_limit_gets_413(upstream: FakeUpstream, sqlite_url: str) -> None:
    gateway = RunningGateway(
        gateway_yaml(upstream.url, sqlite_url).replace(
            "server: {requestTimeoutSeconds: 20}", "server: {maxBodyBytes: 1024}"
        )
    )
    try:
        big = {"model": "chat", "messages": [{"role": "user", "content": "x" * 5000}]}
        response = httpx.post(
            f"{gateway.url}/v1/chat/completions",
            json=big,
            headers={"authorization": f"Bearer {TEST_KEY}"},
        )
        assert response.status_code == 413
        assert response.json()["error"]["code"] == "request_too_large"
        assert upstream.calls["small-model"] == 0

        def chunks() -> Iterator[bytes]:
            yield b'{"model": "chat", "messages": [{"role": "user", "content": "'
            for _ in range(10):
                yield b"y" * 200
            yield b'"}]}'

        chunked = httpx.post(  # no content-length: the limit holds while reading
            f"{gateway.url}/v1/chat/completions",
            content=chunks(),
            headers={"authorization": f"Bearer {TEST_KEY}"},
        )
        assert chunked.status_code == 413
    finally:
        gateway.stop()


def test_telemetry_disabled_writes_nothing(upstream: FakeUpstream, sqlite_url: str) -> None:
    gateway = RunningGateway(
        gateway_yaml(upstream.url, sqlite_url, extra="telemetry: {enabled: false}")
    )
    try:
        answer = gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
        assert answer.choices[0].message.content
        assert gateway.rows() == [] and gateway.usage_daily() == []
    finally:
        gateway.stop()


@pytest.mark.parametrize("writer", ["process", "inline"])
def test_a_database_outage_never_fails_a_call(
    upstream: FakeUpstream, sqlite_url: str, writer: str
) -> None:
    gateway = RunningGateway(gateway_yaml(upstream.url, sqlite_url), writer=writer)
    try:

        async def rename(old: str, new: str) -> None:
            async with gateway.runtime.engine.begin() as connection:
                await connection.execute(text(f"ALTER TABLE {old} RENAME TO {new}"))

        gateway.server.run(rename("telemetry", "telemetry_away"))
        for _ in range(3):
            answer = gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
            assert answer.choices[0].message.content
        deadline = time.monotonic() + 10  # the writer process starts, then fails
        while gateway.runtime.writer.failed_batches < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert gateway.runtime.writer.failed_batches >= 1
        gateway.server.run(rename("telemetry_away", "telemetry"))
        rows = gateway.rows(expect=3)
        assert len(rows) == 3 and all(r["success"] == 1 for r in rows)
        assert gateway.runtime.writer.dropped == 0
        metrics = httpx.get(f"{gateway.url}/metrics").text
        assert "gateway_telemetry_dropped_rows 0.0" in metrics
    finally:
        gateway.stop()


def test_readiness_names_the_database_when_it_is_down(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    gateway = RunningGateway(gateway_yaml(upstream.url, sqlite_url))
    try:
        assert httpx.get(f"{gateway.url}/readyz").status_code == 200
        # The database becomes unreachable (a path that cannot exist).
        gateway.runtime.engine = create_engine("sqlite+aiosqlite:////nonexistent/dir/x.db")
        response = httpx.get(f"{gateway.url}/readyz")
        assert response.status_code == 503
        assert response.json() == {"status": "unavailable", "down": ["database"]}
    finally:
        gateway.stop()


def test_azure_openai_uses_its_deployment_url_and_api_key(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    gateway = RunningGateway(
        gateway_yaml(
            upstream.url,
            sqlite_url,
            providers=f"""  - {{id: azure, adapter: azure_openai, baseUrl: "{upstream.url}",
     apiKey: "azure-secret-1", apiVersion: "2024-10-21"}}""",
            models="""  - {id: az, provider: azure, name: my-deployment, capabilities: [chat],
     price: {input: 2.50, output: 10.00}}""",
            configurations="  - {id: az-chat, mode: fixed, model: az}",
        )
    )
    try:
        upstream.behave("my-deployment", prompt_tokens=100, completion_tokens=10)
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="az-chat", messages=MESSAGES
        )
        assert raw.parse().choices[0].message.content
        sent = upstream.received[-1]
        assert sent.path == "/openai/deployments/my-deployment/chat/completions"
        assert sent.query == {"api-version": "2024-10-21"}
        assert sent.headers["api-key"] == "azure-secret-1"
        assert "Authorization" not in sent.headers
        assert raw.headers["x-gateway-cost-usd"] == "0.00035"  # 100·2.5/1M + 10·10/1M
        (row,) = gateway.rows()
        assert row["adapter_type"] == "azure_openai" and row["actual_cost"] == Decimal("0.00035")
    finally:
        gateway.stop()


def test_no_key_reaches_a_log_line(
    upstream: FakeUpstream, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    gateway = RunningGateway(gateway_yaml(upstream.url, sqlite_url))
    try:
        upstream.behave("small-model", fail_always=500, retry_after="0")
        with pytest.raises(openai.APIStatusError):
            gateway.client().chat.completions.create(model="chat", messages=MESSAGES)
        with pytest.raises(openai.AuthenticationError):
            gateway.client(key="sk-a-wrong-key-123").chat.completions.create(
                model="chat", messages=MESSAGES
            )
        httpx.get(
            f"{gateway.url}/admin/routing/calls", headers={"authorization": f"Bearer {ADMIN_KEY}"}
        )
        gateway.rows()
    finally:
        gateway.stop()
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert logged  # the gateway and its libraries did log something
    for secret in (TEST_KEY, ADMIN_KEY, "sk-upstream-secret-42", "sk-a-wrong-key-123"):
        assert secret not in logged


def test_expose_models_makes_each_active_model_a_fixed_configuration(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    gateway = RunningGateway(
        gateway_yaml(
            upstream.url,
            sqlite_url,
            models="""  - {id: retired, provider: fake, name: retired-model, capabilities: [chat],
     active: false}""",
            extra="exposeModels: true",
        )
    )
    try:
        listed = {m.id for m in gateway.client().models.list()}
        assert {"chat", "small", "embedder", "legacy", "retired"} <= listed
        raw = gateway.client().chat.completions.with_raw_response.create(
            model="small", messages=MESSAGES
        )
        assert raw.headers["x-gateway-model"] == "small"
        assert raw.headers["x-gateway-configuration"] == "small"
        with pytest.raises(openai.APIStatusError) as caught:  # inactive: nothing to serve
            gateway.client().chat.completions.create(model="retired", messages=MESSAGES)
        assert caught.value.status_code == 503
        assert upstream.calls["retired-model"] == 0
    finally:
        gateway.stop()


def test_without_keys_the_admin_api_is_open_only_when_no_admin_key_is_set(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    base = gateway_yaml(upstream.url, sqlite_url)
    open_yaml = base.replace(
        """auth:
  adminKey: ${ADMIN_KEY}
  keys:
    - {id: alice, key: "${ALICE_KEY}"}
    - {id: bob, key: "${BOB_KEY}", configurations: [chat]}""",
        "auth: {allowUnauthenticated: true}",
    )
    assert open_yaml != base
    with_admin = open_yaml.replace(
        "auth: {allowUnauthenticated: true}",
        "auth: {allowUnauthenticated: true, adminKey: ${ADMIN_KEY}}",
    )
    for yaml, status in ((open_yaml, 200), (with_admin, 401)):
        gateway = RunningGateway(yaml)
        try:
            assert httpx.get(f"{gateway.url}/admin/routing/calls").status_code == status
            admin = {"authorization": f"Bearer {ADMIN_KEY}"}
            admitted = httpx.get(f"{gateway.url}/admin/routing/calls", headers=admin)
            assert admitted.status_code == 200
            chat = {"model": "chat", "messages": MESSAGES}
            answer = httpx.post(f"{gateway.url}/v1/chat/completions", json=chat)
            assert answer.status_code == 200  # no key needed on /v1 in this mode
        finally:
            gateway.stop()
