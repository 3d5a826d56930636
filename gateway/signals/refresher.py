"""The signal refresher: health, quality and call history, read off the request path.

A decision reads ``SignalRefresher.health`` / ``.quality`` / ``.history``: plain
attributes, no I/O. Background tasks refresh them, each on its own period
(``health.cacheSeconds``, ``routing.callHistoryCacheSeconds``, 60 s for quality).

Readings also pass through a :class:`SignalStore`. The in-process store is a
dict; a shared store (Redis, gateway/signals/redis_store.py) lets every worker and
replica share one read per period: a refresher that finds a reading younger than
its period in the store takes it instead of querying the database; one that finds
it stale reads the database only if it gets the signal's lease, and otherwise waits
for the holder's reading. A store that fails is logged once and skipped: each
process then reads the database itself until the store answers again.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import describe_error
from gateway.domain import GatewayConfig, HealthSample, HistoryFigures, HistoryKey
from gateway.domain.clock import utc_now
from gateway.signals.health import read_health
from gateway.signals.history import read_call_history
from gateway.signals.quality import read_quality
from gateway.tasks import Supervisor, cancel_and_wait

log = logging.getLogger(__name__)

T = TypeVar("T")

HealthMap = dict[str, HealthSample]
QualityMap = dict[tuple[str, str], float]
HistoryMap = dict[HistoryKey, HistoryFigures]

QUALITY_REFRESH_SECONDS = 60.0
LEASE_SECONDS = 10.0  # a read slower than this lets another process read too
LEASE_POLL_SECONDS = 0.05  # how often a process without the lease looks for the reading


@dataclass(frozen=True, slots=True)
class SignalReading(Generic[T]):
    value: T
    taken_at: datetime  # aware UTC: when the database was read


class SignalStore(Protocol):
    async def get_health(self) -> SignalReading[HealthMap] | None: ...
    async def set_health(self, reading: SignalReading[HealthMap]) -> None: ...
    async def get_quality(self) -> SignalReading[QualityMap] | None: ...
    async def set_quality(self, reading: SignalReading[QualityMap]) -> None: ...
    async def get_history(self) -> SignalReading[HistoryMap] | None: ...
    async def set_history(self, reading: SignalReading[HistoryMap]) -> None: ...
    def lease(self, name: str, seconds: float) -> AbstractAsyncContextManager[bool]:
        """Held while this process reads signal ``name`` from the database: True when it
        got it (no other process is reading it), for at most ``seconds``."""
        ...


class InProcessSignalStore:
    """The default store: this process's memory, shared with no one."""

    def __init__(self) -> None:
        self._health: SignalReading[HealthMap] | None = None
        self._quality: SignalReading[QualityMap] | None = None
        self._history: SignalReading[HistoryMap] | None = None

    async def get_health(self) -> SignalReading[HealthMap] | None:
        return self._health

    async def set_health(self, reading: SignalReading[HealthMap]) -> None:
        self._health = reading

    async def get_quality(self) -> SignalReading[QualityMap] | None:
        return self._quality

    async def set_quality(self, reading: SignalReading[QualityMap]) -> None:
        self._quality = reading

    async def get_history(self) -> SignalReading[HistoryMap] | None:
        return self._history

    async def set_history(self, reading: SignalReading[HistoryMap]) -> None:
        self._history = reading

    @contextlib.asynccontextmanager
    async def lease(self, name: str, seconds: float) -> AsyncIterator[bool]:
        yield True  # one process: its own loops never read the same signal at once


@dataclass(frozen=True, slots=True)
class _Source(Generic[T]):
    name: str
    period: float
    read: Callable[[datetime], Awaitable[T]]
    load: Callable[[], Awaitable[SignalReading[T] | None]]
    save: Callable[[SignalReading[T]], Awaitable[None]]
    apply: Callable[[SignalReading[T] | None], None]  # None: the read failed


class SignalRefresher:
    def __init__(
        self,
        engine: AsyncEngine,
        config: GatewayConfig,
        clock: Callable[[], datetime] = utc_now,
        *,
        store: SignalStore | None = None,
        quality_seconds: float = QUALITY_REFRESH_SECONDS,
        lease_seconds: float = LEASE_SECONDS,
        tasks: Supervisor | None = None,
    ) -> None:
        self._supervisor = tasks or Supervisor()
        self._engine = engine
        self._config = config
        self._clock = clock
        self._store: SignalStore = store or InProcessSignalStore()
        self.health: HealthMap = {}
        self.quality: QualityMap = {}
        self.history: HistoryMap | None = None
        self.history_taken_at: datetime | None = None
        self.health_read_failures = 0
        self.quality_read_failures = 0
        self.history_read_failures = 0
        # Per signal: reads of the database, and readings taken from the store instead.
        self.database_reads: dict[str, int] = {}
        self.shared_reads: dict[str, int] = {}
        self.store_answers = True  # False while the store fails (each read goes to the database)
        self._lease_seconds = lease_seconds
        self._sources = self._build_sources(quality_seconds)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def history_enabled(self) -> bool:
        """The history is read only with ``routing.callHistory`` on and telemetry enabled."""
        return self._config.routing.call_history and self._config.telemetry.enabled

    async def start(self) -> None:
        """Read every signal once (or take another process's fresh reading), then keep
        them fresh in the background."""
        if self._tasks:
            return
        await self.refresh_due()
        self._tasks = [
            self._supervisor.spawn(f"signals-{source.name}", functools.partial(self._loop, source))
            for source in self._sources
        ]

    async def stop(self) -> None:
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(*tasks)

    async def refresh_now(self) -> None:
        """Read every signal from the database now, ignoring the store's readings."""
        for source in self._sources:
            await self._refresh(source, reuse_shared=False)

    async def refresh_due(self) -> None:
        """What each background tick does: take the store's reading when it is younger
        than the signal's period (another worker read it), else read the database."""
        for source in self._sources:
            await self._refresh(source, reuse_shared=True)

    def _build_sources(self, quality_seconds: float) -> list[_Source[Any]]:
        settings = self._config
        sources: list[_Source[Any]] = [
            _Source(
                "health",
                float(settings.health.cache_seconds),
                lambda now: read_health(self._engine, settings.health.window_seconds, now),
                self._store.get_health,
                self._store.set_health,
                self._apply_health,
            ),
            _Source(
                "quality",
                quality_seconds,
                lambda _now: read_quality(self._engine),
                self._store.get_quality,
                self._store.set_quality,
                self._apply_quality,
            ),
        ]
        if self.history_enabled:
            routing = settings.routing
            days = routing.call_history_days
            sources.append(
                _Source(
                    "history",
                    float(settings.routing.call_history_cache_seconds),
                    lambda now: read_call_history(
                        self._engine,
                        days,
                        now,
                        statistic=routing.call_history_statistic,
                        stream_latency=routing.stream_latency,
                    ),
                    self._store.get_history,
                    self._store.set_history,
                    self._apply_history,
                )
            )
        return sources

    async def _loop(self, source: _Source[T]) -> None:
        while True:
            await asyncio.sleep(source.period)
            await self._refresh(source, reuse_shared=True)

    async def _refresh(self, source: _Source[T], *, reuse_shared: bool) -> None:
        if not reuse_shared:
            await self._read(source)
            return
        if self._take_shared(source, await self._load(source)):
            return
        async with self._leased(source) as held:
            if held:
                # Look again: a holder that finished between our look and our lease saved
                # a fresh reading already.
                if not self._take_shared(source, await self._load(source)):
                    await self._read(source)
                return
        # Another process is reading it: take its reading when it lands.
        deadline = time.monotonic() + self._lease_seconds
        while time.monotonic() < deadline:
            await asyncio.sleep(LEASE_POLL_SECONDS)
            if self._take_shared(source, await self._load(source)):
                return
        await self._read(source)  # it never came: the holder died or is slow

    def _take_shared(self, source: _Source[T], shared: SignalReading[T] | None) -> bool:
        if shared is None or self._clock() - shared.taken_at >= timedelta(seconds=source.period):
            return False
        source.apply(shared)  # another worker read it recently
        self.shared_reads[source.name] = self.shared_reads.get(source.name, 0) + 1
        return True

    async def _read(self, source: _Source[T]) -> None:
        now = self._clock()
        try:
            reading = SignalReading(await source.read(now), now)
        except Exception as exc:  # a failed read degrades the signal, never a call
            log.warning("signals: %s read failed (%s)", source.name, describe_error(exc))
            source.apply(None)
            return
        self.database_reads[source.name] = self.database_reads.get(source.name, 0) + 1
        source.apply(reading)
        try:
            await source.save(reading)
        except Exception as exc:
            self._store_failed(exc)
        else:
            self._store_answered()

    async def _load(self, source: _Source[T]) -> SignalReading[T] | None:
        try:
            shared = await source.load()
        except Exception as exc:
            self._store_failed(exc)
            return None
        self._store_answered()
        return shared

    @contextlib.asynccontextmanager
    async def _leased(self, source: _Source[T]) -> AsyncIterator[bool]:
        """The store's lease on ``source``; a store that fails counts as held (read it)."""
        lease = self._store.lease(source.name, self._lease_seconds)
        try:
            held = await lease.__aenter__()
        except Exception as exc:
            self._store_failed(exc)
            yield True
            return
        try:
            yield held
        finally:
            with contextlib.suppress(Exception):  # it expires on its own
                await lease.__aexit__(None, None, None)

    def _store_failed(self, exc: Exception) -> None:
        if self.store_answers:
            self.store_answers = False
            log.warning(
                "signals: the shared snapshot store does not answer (%s); each process "
                "reads the database itself until it does",
                describe_error(exc),
            )

    def _store_answered(self) -> None:
        if not self.store_answers:
            self.store_answers = True
            log.warning("signals: the shared snapshot store answers again")

    def _apply_health(self, reading: SignalReading[HealthMap] | None) -> None:
        if reading is None:
            # Keep the last health: a transient failure should not erase every provider's state.
            self.health_read_failures += 1
            return
        self.health = reading.value

    def _apply_quality(self, reading: SignalReading[QualityMap] | None) -> None:
        if reading is None:
            self.quality_read_failures += 1
            return
        self.quality = reading.value

    def _apply_history(self, reading: SignalReading[HistoryMap] | None) -> None:
        if reading is None:
            # A failed read counts as callHistory off (docs/routing.md#call-history).
            self.history_read_failures += 1
            self.history, self.history_taken_at = None, None
            return
        self.history, self.history_taken_at = reading.value, reading.taken_at
