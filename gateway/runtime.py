"""Wire one process's shared resources from the resolved config.

Built in the app's lifespan (and by CLI commands that need the same pieces), so
nothing is read or opened at import time.

Two kinds of parts: what the process opens once (database engine, telemetry writer,
upstream connection pool, token counter, budgets, cache store, metrics), and what is
derived from the configuration (keys, signals, routing, the pipeline): a ``Serving``.
A reload builds a new Serving and swaps it in one assignment, between calls; a call
takes the Serving once and finishes on it (docs/operations.md, "Reloading the
configuration").
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway import allocator
from gateway.auth import KeyRing
from gateway.budgets import DatabaseBudgets, hold_seconds_for
from gateway.cache import StoredResponseCache, make_store
from gateway.cache.keys import configuration_fingerprints
from gateway.circuits import CircuitStates, InProcessCircuits
from gateway.circuits.view import circuit_views
from gateway.config.errors import ConfigError
from gateway.db.console_sessions import SessionRevocations
from gateway.db.engine import create_engine
from gateway.db.redis_values import SkippedValues
from gateway.domain.clock import utc_now
from gateway.domain.settings import GatewayConfig
from gateway.governance.admin import Admin
from gateway.governance.directory import Directory
from gateway.governance.store import GovernanceStore
from gateway.limits import RateLimiter
from gateway.limits.local import InProcessLimiter
from gateway.metrics import Metrics, multiprocess
from gateway.pipeline.attempts import Attempts
from gateway.pipeline.context import Target
from gateway.pipeline.count_tokens import TokenCounting
from gateway.pipeline.resolve import Resolver
from gateway.pipeline.service import Pipeline
from gateway.pipeline.snapshots import SnapshotSource
from gateway.routing.exploration import ExplorationCounts
from gateway.session import SessionSigner, signer_for
from gateway.signals.refresher import SignalRefresher, SignalStore
from gateway.tasks import Supervisor, cancel_and_wait
from gateway.telemetry.overview import SettledDays
from gateway.telemetry.process_writer import ProcessWriter
from gateway.telemetry.retention import Retention
from gateway.telemetry.supervision import separate_process_can_open
from gateway.telemetry.writer import TelemetryWriter, WriterSettings
from gateway.tracing import CallTracer, NoTracing
from gateway.upstream.base import Adapter
from gateway.upstream.http import ReadLimits, Transport, UpstreamHTTP
from gateway.upstream.registry import AdapterRegistry
from gateway.usage.tokens import TokenCounter, load_warning, make_default_counter

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

GAUGE_REFRESH_SECONDS = 1.0  # several workers: each writes its gauges for the others' scrapes


@dataclass(frozen=True, slots=True)
class ConfigVersion:
    """Which configuration a process serves (``GET /admin/config/version``)."""

    digest: str | None  # "sha256:..." of the file's bytes; None when not read from a file
    loaded_at: datetime  # aware UTC
    generation: int = 1  # 1 at start, +1 for each configuration a reload applied


@dataclass(frozen=True, slots=True)
class Serving:
    """Everything derived from one configuration: swapped whole on a reload."""

    config: GatewayConfig
    version: ConfigVersion
    keys: KeyRing
    signals: SignalRefresher
    snapshots: SnapshotSource
    resolver: Resolver
    pipeline: Pipeline
    counting: TokenCounting  # POST /v1/messages/count_tokens
    # The console's session signer, from auth.adminKey: a new key ends every session.
    signer: SessionSigner | None


class Runtime:
    def __init__(
        self,
        config: GatewayConfig,
        *,
        transport: Transport | None = None,
        counter: TokenCounter | None = None,
        digest: str | None = None,
    ) -> None:
        self.metrics = Metrics()
        # Every background loop runs under this supervisor, every Redis value is checked
        # through this counter (docs/operations.md, "Background tasks", "Values read from
        # Redis").
        self.tasks = Supervisor(self.metrics.observe_task_restart)
        self.skipped = SkippedValues(self.metrics.observe_redis_skipped)
        self.engine: AsyncEngine = create_engine(config.database.url)
        self.writer: TelemetryWriter | ProcessWriter = self._writer_for(config)
        self.retention: Retention | None = None
        if config.telemetry.enabled:
            self.retention = Retention(
                self.engine, config.telemetry.retention_days, tasks=self.tasks
            )
        # The console Overview's figures of settled days (gateway.telemetry.overview).
        self.overview_days = SettledDays()
        self.revocations = SessionRevocations(self.engine)  # console sign-outs
        self._redis: Redis | None = None
        self._limiter_redis: Redis | None = None  # the rate limiter's own pool
        self._signal_store: SignalStore | None = None
        if config.redis.url:
            # Every process of the deployment shares circuits and signal readings
            # (docs/operations.md, "What is shared between processes"). Imported only
            # here: the Redis client costs a process that uses none about 6 MB.
            from gateway.db.redis_client import redis_client
            from gateway.signals.redis_store import RedisSignalStore

            self._redis = redis_client(config.redis.url)
            self._signal_store = RedisSignalStore(self._redis, config, skipped=self.skipped)
        self.breakers: CircuitStates = self._breakers_for(config)
        # Every key and team (YAML and database), looked up on each call (gateway.governance).
        self.directory = Directory(
            GovernanceStore(self.engine), config, redis=self._redis, tasks=self.tasks
        )
        self._gauges: asyncio.Task[None] | None = None
        server = config.server
        self.http = UpstreamHTTP(
            transport,
            ReadLimits(server.max_upstream_body_bytes, server.max_upstream_event_bytes),
            server.max_upstream_connections,
        )
        self.adapters = AdapterRegistry(self.http)
        # Only the encodings the configured models use: each costs tens of megabytes.
        self.counter = counter or make_default_counter(model.name for model in config.models)
        self.budgets = DatabaseBudgets(
            self.engine,
            self.counter,
            hold_seconds=hold_seconds_for(config.server.request_timeout_seconds),
            on_outage=config.budgets.on_database_outage,
            tasks=self.tasks,
        )
        # Rate limits: kept across reloads (the counts are the deployment's, not a file's).
        self.limiter: RateLimiter = self._limiter_for(config)
        self.cache = StoredResponseCache(
            make_store(config.cache, self.engine, self.skipped),
            fingerprints=configuration_fingerprints(config),
            tasks=self.tasks,
        )
        self.tracer: CallTracer = NoTracing()
        if config.telemetry.otel.enabled:
            # Imported only here: the OpenTelemetry SDK costs a process that traces nothing.
            try:
                from gateway.tracing.otel import build_tracer
            except ImportError as missing:
                raise ConfigError(
                    [
                        "telemetry.otel.enabled: the OpenTelemetry SDK is not installed"
                        " (pip install 'llm-gateway[otel]')"
                    ]
                ) from missing

            self.tracer = build_tracer(config.telemetry.otel, self._provider_keys)
        # routing.exploration's counts, per configuration id: kept across reloads.
        self._exploration: dict[str, ExplorationCounts] = {}
        self.serving = self._serving(config, ConfigVersion(digest, utc_now()))

    # The parts of the current Serving, for code that reads one of them at a time. A call
    # that needs several takes ``runtime.serving`` once instead.
    @property
    def config(self) -> GatewayConfig:
        return self.serving.config

    @property
    def keys(self) -> KeyRing:
        return self.serving.keys

    @property
    def admin(self) -> Admin:
        """The admin writes on keys and teams, against the current configuration."""
        return Admin(self.directory, self.serving.config)

    @property
    def signals(self) -> SignalRefresher:
        return self.serving.signals

    @property
    def snapshots(self) -> SnapshotSource:
        return self.serving.snapshots

    @property
    def resolver(self) -> Resolver:
        return self.serving.resolver

    @property
    def pipeline(self) -> Pipeline:
        return self.serving.pipeline

    @property
    def version(self) -> ConfigVersion:
        return self.serving.version

    def _serving(self, config: GatewayConfig, version: ConfigVersion) -> Serving:
        signals = SignalRefresher(
            self.engine, config, utc_now, store=self._signal_store, tasks=self.tasks
        )
        snapshots = SnapshotSource(config, signals, self.breakers)
        resolver = Resolver(
            config,
            self.breakers,
            snapshots.snapshot,
            snapshots.health_scores,
            exploration=self._exploration,
        )
        attempts = Attempts(
            resolver, self.breakers, self._adapter_for, self.metrics.observe_upstream
        )
        pipeline = Pipeline(
            config,
            resolver,
            attempts,
            self.counter,
            self.writer,
            self.metrics,
            budgets=self.budgets,
            cache=self.cache.with_fingerprints(configuration_fingerprints(config)),
            tracer=self.tracer,
            limiter=self.limiter,
        )
        auth = config.auth
        signer = signer_for(auth.admin_key_hash, auth.console_session_hours)
        counting = TokenCounting(config, resolver, self.adapters, self.counter)
        return Serving(
            config, version, KeyRing(auth), signals, snapshots, resolver, pipeline, counting, signer
        )

    def _provider_keys(self) -> tuple[str, ...]:
        """The provider keys captured content is redacted of (telemetry.otel.captureContent)."""
        providers = self.serving.config.providers.values()
        return tuple(provider.api_key for provider in providers if provider.api_key)

    def _writer_for(self, config: GatewayConfig) -> TelemetryWriter | ProcessWriter:
        """The telemetry writer: in a process of its own (``telemetry.writer: process``),
        unless the database is in memory (only this process can reach it), or on the loop."""
        settings = WriterSettings(enabled=config.telemetry.enabled)
        url = config.database.url
        if config.telemetry.writer == "process" and separate_process_can_open(url):
            return ProcessWriter(
                url,
                settings,
                on_restart=self.metrics.observe_task_restart,
                log_format=config.server.log_format,
            )
        return TelemetryWriter(self.engine, settings, tasks=self.tasks)

    def _breakers_for(self, config: GatewayConfig) -> CircuitStates:
        settings = config.circuit_breaker
        if self._redis is not None:
            from gateway.circuits.redis_circuits import RedisCircuits

            return RedisCircuits(
                self._redis,
                settings.failure_threshold,
                settings.cooldown_seconds,
                tasks=self.tasks,
                skipped=self.skipped,
            )
        return InProcessCircuits(settings.failure_threshold, settings.cooldown_seconds)

    def _limiter_for(self, config: GatewayConfig) -> RateLimiter:
        """In process; with ``redis.url``, in Redis (this process's own limiter standing in
        during an outage under ``onRedisOutage: local``)."""
        lease_ms = int((config.server.request_timeout_seconds + 60.0) * 1000)
        local = InProcessLimiter(lease_ms)
        if self._redis is None or config.redis.url is None:
            return local
        from gateway.db.redis_client import limiter_client
        from gateway.limits.redis_limiter import RedisLimiter

        self._limiter_redis = limiter_client(config.redis.url)
        refuse = config.rate_limits.on_redis_outage == "refuse"
        return RedisLimiter(self._limiter_redis, local, lease_ms=lease_ms, refuse_on_outage=refuse)

    def _adapter_for(self, target: Target) -> Adapter:
        return self.adapters.for_type(target.provider.adapter)

    async def reload(self, config: GatewayConfig, digest: str | None) -> Serving:
        """Serve ``config`` from the next call on; calls under way finish on the old one.

        The new signals are read before the swap, so the very next decision sees them
        (``routing.callHistory`` switched on included). The connection pool, the
        telemetry writer and the circuits of unchanged settings are kept. The caller has
        checked the file (gateway.config.changes); restart-only sections are not applied.
        """
        old = self.serving
        old_breakers = self.breakers
        if config.circuit_breaker != old.config.circuit_breaker:
            self.breakers = self._breakers_for(config)  # new thresholds: circuits start closed
            await self.breakers.start()
        version = ConfigVersion(digest, utc_now(), old.version.generation + 1)
        new = self._serving(config, version)
        # The failure counts are the process's (gauges "since the process started").
        new.signals.health_read_failures = old.signals.health_read_failures
        new.signals.quality_read_failures = old.signals.quality_read_failures
        new.signals.history_read_failures = old.signals.history_read_failures
        await new.signals.start()
        self.serving = new  # one assignment: a call sees the old Serving or the new one
        self.directory.use_config(config)
        await old.signals.stop()
        if old_breakers is not self.breakers:
            await old_breakers.stop()
        return new

    async def start(self) -> None:
        # Loading an encoding parses megabytes: at startup, off the loop, not on a first call.
        await asyncio.to_thread(self.counter.warm)
        allocator.trim()  # what parsing the encoding files left free goes back to the system
        warning = load_warning(self.counter)
        if warning is not None:
            log.warning(warning)
        await self.writer.start()
        if self.retention is not None:
            await self.retention.start()
        await self.breakers.start()
        await self.signals.start()
        await self.budgets.start()
        await self.cache.start()
        await self.directory.start()
        if multiprocess():
            # Written once now, then every second: the other workers' scrapes see this
            # worker's startup reads (signals) from its first answer on, not a second later.
            self.refresh_gauges(self.metrics)
            self._gauges = self.tasks.spawn("metrics-gauges", self._refresh_gauges)

    @property
    def redis(self) -> Redis | None:
        """The client of ``redis.url``, None without one."""
        return self._redis

    async def stop(self) -> None:
        await cancel_and_wait(self._gauges)
        await self.directory.stop()
        await self.cache.stop()
        await self.budgets.stop()
        await self.signals.stop()
        await self.breakers.stop()
        if self.retention is not None:
            await self.retention.stop()
        await self.writer.stop()
        await asyncio.to_thread(self.tracer.shutdown)  # the spans queued are sent (5 s at most)
        await self.http.aclose()
        await self.engine.dispose()
        if self._redis is not None:
            await self._redis.aclose()
        if self._limiter_redis is not None:
            await self._limiter_redis.aclose()
        self.refresh_gauges(self.metrics)
        self.metrics.process_ended()

    async def _refresh_gauges(self) -> None:
        while True:
            await asyncio.sleep(GAUGE_REFRESH_SECONDS)
            self.refresh_gauges(self.metrics)

    def refresh_gauges(self, metrics: Metrics) -> None:
        metrics.otel_dropped.set(self.tracer.dropped_spans())
        metrics.queue_depth.set(self.writer.queue_depth)
        pool = self.http.pool()
        metrics.upstream_pool_size.set(pool.size)
        metrics.upstream_pool_waiting.set(pool.waiting)
        metrics.upstream_pool_waits.set(pool.waits)
        metrics.dropped_rows.set(self.writer.dropped)
        metrics.history_read_failures.set(self.signals.history_read_failures)
        metrics.budget_unchecked.set(self.budgets.unchecked)
        metrics.budget_pending.set(self.budgets.recovery.pending_calls)
        circuits = circuit_views(self.breakers, self.config.providers, time.monotonic())
        metrics.set_circuit_states({pid: view.gauge for pid, view in circuits.items()})
        for name, count in self.signals.database_reads.items():
            metrics.set_gauge(metrics.signal_reads, count, name, "database")
        for name, count in self.signals.shared_reads.items():
            metrics.set_gauge(metrics.signal_reads, count, name, "shared")
