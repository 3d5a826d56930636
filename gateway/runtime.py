"""Wire one process's shared resources from the resolved config.

Built in the app's lifespan (and by CLI commands that need the same pieces), so
nothing is read or opened at import time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway import allocator
from gateway.auth import KeyRing
from gateway.budgets import DatabaseBudgets, hold_seconds_for
from gateway.cache import StoredResponseCache, make_store
from gateway.cache.keys import configuration_fingerprints
from gateway.circuits import CircuitStates, InProcessCircuits
from gateway.db.engine import create_engine
from gateway.domain.settings import GatewayConfig
from gateway.metrics import Metrics, multiprocess
from gateway.pipeline.attempts import Attempts
from gateway.pipeline.context import Target
from gateway.pipeline.resolve import Resolver
from gateway.pipeline.service import Pipeline
from gateway.pipeline.snapshots import SnapshotSource
from gateway.signals.cache import SignalRefresher, SignalStore
from gateway.telemetry.writer import TelemetryWriter
from gateway.upstream.base import Adapter
from gateway.upstream.http import ReadLimits, Transport, UpstreamHTTP
from gateway.upstream.registry import AdapterRegistry
from gateway.usage.tokens import TokenCounter, load_warning, make_default_counter

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

GAUGE_REFRESH_SECONDS = 1.0  # several workers: each writes its gauges for the others' scrapes


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
        self._redis: Redis | None = None
        self.breakers: CircuitStates
        store: SignalStore | None = None
        breaker = config.circuit_breaker
        if config.redis.url:
            # Every process of the deployment shares circuits and signal snapshots
            # (docs/operations.md, "What is shared between processes"). Imported only
            # here: the Redis client costs a process that uses none about 6 MB.
            from gateway.circuits.redis_circuits import RedisCircuits
            from gateway.db.redis_client import redis_client
            from gateway.signals.redis_store import RedisSignalStore

            self._redis = redis_client(config.redis.url)
            self.breakers = RedisCircuits(
                self._redis, breaker.failure_threshold, breaker.cooldown_seconds
            )
            store = RedisSignalStore(self._redis, config)
        else:
            self.breakers = InProcessCircuits(breaker.failure_threshold, breaker.cooldown_seconds)
        self.signals = SignalRefresher(self.engine, config, utc_now, store=store)
        self._gauges: asyncio.Task[None] | None = None
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
        await self.breakers.start()
        await self.signals.start()
        await self.budgets.start()
        await self.cache.start()
        if multiprocess():
            self._gauges = asyncio.create_task(self._refresh_gauges(), name="metrics-gauges")

    async def stop(self) -> None:
        if self._gauges is not None:
            self._gauges.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._gauges
        await self.cache.stop()
        await self.budgets.stop()
        await self.signals.stop()
        await self.breakers.stop()
        await self.writer.stop()
        await self.http.aclose()
        await self.engine.dispose()
        if self._redis is not None:
            await self._redis.aclose()
        self.refresh_gauges(self.metrics)
        self.metrics.process_ended()

    async def _refresh_gauges(self) -> None:
        while True:
            await asyncio.sleep(GAUGE_REFRESH_SECONDS)
            self.refresh_gauges(self.metrics)

    def refresh_gauges(self, metrics: Metrics) -> None:
        metrics.queue_depth.set(self.writer.queue_depth)
        metrics.dropped_rows.set(self.writer.dropped)
        metrics.history_read_failures.set(self.signals.history_read_failures)
        metrics.budget_unchecked.set(self.budgets.unchecked)
        metrics.budget_pending.set(self.budgets.recovery.pending_calls)
        for name, count in self.signals.database_reads.items():
            metrics.set_gauge(metrics.signal_reads, count, name, "database")
        for name, count in self.signals.shared_reads.items():
            metrics.set_gauge(metrics.signal_reads, count, name, "shared")
