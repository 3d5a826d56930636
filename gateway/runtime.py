"""Wire one process's shared resources from the resolved config.

Built in the app's lifespan (and by CLI commands that need the same pieces), so
nothing is read or opened at import time.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway import allocator
from gateway.auth import KeyRing
from gateway.budgets import DatabaseBudgets, hold_seconds_for
from gateway.cache import StoredResponseCache, make_store
from gateway.cache.keys import configuration_fingerprints
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
from gateway.upstream.http import ReadLimits, Transport, UpstreamHTTP
from gateway.upstream.registry import AdapterRegistry
from gateway.usage.tokens import TokenCounter, load_warning, make_default_counter

log = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


class Runtime:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        transport: Transport | None = None,
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
        server = config.server
        self.http = UpstreamHTTP(
            transport,
            ReadLimits(server.max_upstream_body_bytes, server.max_upstream_event_bytes),
        )
        self.adapters = AdapterRegistry(self.http)
        # Only the encodings the configured models use: each costs tens of megabytes.
        self.counter = counter or make_default_counter(model.name for model in config.models)
        self.resolver = Resolver(
            config, self.breakers, self.snapshots.snapshot, self.snapshots.health_scores
        )
        attempts = Attempts(
            self.resolver, self.breakers, self._adapter_for, self.metrics.observe_upstream
        )
        self.budgets = DatabaseBudgets(
            self.engine,
            self.counter,
            hold_seconds=hold_seconds_for(config.server.request_timeout_seconds),
            on_outage=config.budgets.on_database_outage,
        )
        self.cache = StoredResponseCache(
            make_store(config.cache, self.engine), fingerprints=configuration_fingerprints(config)
        )
        self.pipeline = Pipeline(
            config,
            self.resolver,
            attempts,
            self.counter,
            self.writer,
            self.metrics,
            budgets=self.budgets,
            cache=self.cache,
        )

    def _adapter_for(self, target: Target) -> Adapter:
        return self.adapters.for_type(target.provider.adapter)

    async def start(self) -> None:
        # Loading an encoding parses megabytes: at startup, off the loop, not on a first call.
        await asyncio.to_thread(self.counter.warm)
        allocator.trim()  # what parsing the encoding files left free goes back to the system
        warning = load_warning(self.counter)
        if warning is not None:
            log.warning(warning)
        await self.writer.start()
        await self.signals.start()
        await self.budgets.start()
        await self.cache.start()

    async def stop(self) -> None:
        await self.cache.stop()
        await self.budgets.stop()
        await self.signals.stop()
        await self.writer.stop()
        await self.http.aclose()
        await self.engine.dispose()

    def refresh_gauges(self, metrics: Metrics) -> None:
        metrics.queue_depth.set(self.writer.queue_depth)
        metrics.dropped_rows.set(self.writer.dropped)
        metrics.history_read_failures.set(self.signals.history_read_failures)
        metrics.budget_unchecked.set(self.budgets.unchecked)
        metrics.budget_pending.set(self.budgets.recovery.pending_calls)
