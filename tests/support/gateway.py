"""Start the real gateway on loopback from YAML text, and read back what it recorded."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import openai
from sqlalchemy import select

from gateway.api.app import create_app
from gateway.api.serving import uvicorn_options
from gateway.config.loader import load_config_text
from gateway.db.tables import telemetry, usage_daily
from gateway.runtime import Runtime
from gateway.usage.tokens import TokenCounter
from tests.support.migrated import migrate
from tests.support.servers import UvicornServer

TEST_KEY = "sk-test-alice-0123456789"
OTHER_KEY = "sk-test-bob-9876543210"
ADMIN_KEY = "sk-test-admin-5555555555"
ENVIRON = {"ALICE_KEY": TEST_KEY, "BOB_KEY": OTHER_KEY, "ADMIN_KEY": ADMIN_KEY}


class RunningGateway:
    def __init__(
        self,
        yaml_text: str,
        environ: dict[str, str] | None = None,
        *,
        counter: TokenCounter | None = None,
        writer: str = "inline",
    ) -> None:
        config = load_config_text(yaml_text, {**ENVIRON, **(environ or {})})
        # The telemetry writer on the loop unless a test asks for the writer process: a
        # writer process costs each of the suite's hundreds of gateways about half a
        # second of start (docs/performance.md#the-telemetry-writer-process). Every
        # ``gateway serve`` the suite starts (tests/support/process.py) runs the default.
        self.config = replace(config, telemetry=replace(config.telemetry, writer=writer))
        migrate(self.config.database.url)
        self.app = create_app(self.config, counter=counter)
        self.server = UvicornServer(self.app, options=uvicorn_options(self.config.server))
        self.url = self.server.url
        self.runtime: Runtime = self.app.state.runtime

    def client(self, key: str = TEST_KEY, **kwargs: Any) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key=key, max_retries=0, **kwargs)

    def flush(self) -> None:
        self.server.run(self.runtime.writer.flush())

    def refresh_signals(self) -> None:
        self.flush()
        self.server.run(self.runtime.signals.refresh_now())

    def rows(self, expect: int | None = None) -> list[dict[str, Any]]:
        """The telemetry rows; with ``expect``, wait (up to 5 s) until that many exist.

        A stream's row is recorded when the relay ends, which can be just after the
        client has read the last event.
        """
        deadline = time.monotonic() + 5
        while True:
            self.flush()
            rows = self._select(select(telemetry).order_by(telemetry.c.id))
            if expect is None or len(rows) >= expect or time.monotonic() > deadline:
                return rows
            time.sleep(0.01)

    def usage_daily(self) -> list[dict[str, Any]]:
        self.flush()
        return self._select(select(usage_daily))

    def _select(self, query: Any) -> list[dict[str, Any]]:
        async def read() -> list[dict[str, Any]]:
            async with self.runtime.engine.connect() as connection:
                result = await connection.execute(query)
                return [dict(row) for row in result.mappings().all()]

        return self.server.run(read())

    def stop(self) -> None:
        self.server.stop()


@contextmanager
def running_gateway(
    yaml_text: str, environ: dict[str, str] | None = None, **options: Any
) -> Iterator[RunningGateway]:
    """A gateway serving ``yaml_text`` for the block, stopped after it."""
    gateway = RunningGateway(yaml_text, environ, **options)
    try:
        yield gateway
    finally:
        gateway.stop()


def anthropic_provider(upstream_url: str, options: str = "", *, key: str = "sk-ant-test") -> str:
    """A ``claude`` provider on the fake upstream's Messages API, for ``providers=``;
    ``options`` are more of its fields (``timeoutSeconds: 5, maxRetries: 1``)."""
    fields = f'apiKey: "{key}"' + (f", {options}" if options else "")
    return (
        f'  - {{id: claude, adapter: anthropic, baseUrl: "{upstream_url}/anthropic/v1",\n'
        f"     {fields}}}\n"
    )


def gateway_yaml(
    upstream_url: str,
    database_url: str,
    *,
    providers: str = "",
    models: str = "",
    configurations: str = "",
    routing: str = "{policyMode: balanced}",
    extra: str = "",
) -> str:
    """A config with one OpenAI-compatible provider on the fake upstream, plus what a test adds."""
    return f"""
server: {{requestTimeoutSeconds: 20}}
database: {{url: "{database_url}"}}
auth:
  adminKey: ${{ADMIN_KEY}}
  keys:
    - {{id: alice, key: "${{ALICE_KEY}}"}}
    - {{id: bob, key: "${{BOB_KEY}}", configurations: [chat]}}
routing: {routing}
circuitBreaker: {{failureThreshold: 50, cooldownSeconds: 30}}
providers:
  - {{id: fake, adapter: openai, baseUrl: "{upstream_url}/v1", apiKey: "sk-upstream-secret-42",
     timeoutSeconds: 5, maxRetries: 2}}
  - {{id: impatient, adapter: openai, baseUrl: "{upstream_url}/v1", timeoutSeconds: 0.5,
     maxRetries: 1}}
{providers}
models:
  - {{id: small, provider: fake, name: small-model, capabilities: [chat, tools, vision, streaming],
     contextLength: 128000, maxOutputTokens: 4096, price: {{input: 0.15, output: 0.60}}}}
  - {{id: embedder, provider: fake, name: embed-model, capabilities: [embeddings],
     price: {{input: 0.02, output: 0}}}}
  - {{id: legacy, provider: fake, name: legacy-model, capabilities: [completion],
     price: {{input: 1.50, output: 2.00}}}}
  - {{id: hasty, provider: impatient, name: hasty-model, capabilities: [chat]}}
{models}
configurations:
  - {{id: chat, mode: fixed, model: small}}
  - {{id: embed, mode: fixed, model: embedder}}
  - {{id: complete, mode: fixed, model: legacy}}
  - {{id: hasty-chat, mode: fixed, model: hasty}}
{configurations}
{extra}
"""
