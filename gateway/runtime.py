"""Wire one process's shared resources from the resolved config.

Built in the app's lifespan (and by CLI commands that need the same pieces), so
nothing is read or opened at import time.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.auth import KeyRing
from gateway.db.engine import create_engine
from gateway.domain.settings import GatewayConfig
from gateway.metrics import Metrics
from gateway.pipeline.attempts import Attempts
from gateway.pipeline.context import Target
from gateway.pipeline.resolve import Resolver
from gateway.pipeline.service import Pipeline
from gateway.pipeline.snapshots import SnapshotSource
from gateway.routing.circuit import CircuitBreakers
from gateway.signals.cache import SignalRefresher
from gateway.telemetry.writer import TelemetryWriter
from gateway.upstream.base import Adapter
from gateway.upstream.http import make_client
from gateway.upstream.registry import AdapterRegistry
from gateway.usage.tokens import TokenCounter, make_default_counter

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Runtime:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.config = config
        self.metrics = Metrics()
        self.keys = KeyRing(config.auth)
        self.engine: AsyncEngine = create_engine(config.database.url)
        self.writer = TelemetryWriter(
            self.engine,
            retention_days=config.telemetry.retention_days,
            enabled=config.telemetry.enabled,
        )
        self.signals = SignalRefresher(self.engine, config, utc_now)
        self.breakers = CircuitBreakers(
            config.circuit_breaker.failure_threshold, config.circuit_breaker.cooldown_seconds
        )
        self.snapshots = SnapshotSource(config, self.signals, self.breakers)
        self.client = make_client(transport)
        self.adapters = AdapterRegistry(self.client)
        self.counter = counter or make_default_counter()
        self.resolver = Resolver(
            config, self.breakers, self.snapshots.snapshot, self.snapshots.health_scores
        )
        attempts = Attempts(
            self.resolver, self.breakers, self._adapter_for, self.metrics.observe_upstream
        )
        self.pipeline = Pipeline(
            config, self.resolver, attempts, self.counter, self.writer, self.metrics
        )

    def _adapter_for(self, target: Target) -> Adapter:
        return self.adapters.for_type(target.provider.adapter)

    async def start(self) -> None:
        await self.writer.start()
        await self.signals.start()

    async def stop(self) -> None:
        await self.signals.stop()
        await self.writer.stop()
        await self.client.aclose()
        await self.engine.dispose()

    def refresh_gauges(self, metrics: Metrics) -> None:
        metrics.queue_depth.set(self.writer.queue_depth)
        metrics.dropped_rows.set(self.writer.dropped)
        metrics.history_read_failures.set(self.signals.history_read_failures)
