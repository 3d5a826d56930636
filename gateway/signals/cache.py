"""The per-process signal cache: health, quality and call history, refreshed off the request path.

A decision reads ``SignalRefresher.health`` / ``.quality`` / ``.history``: plain
attributes, no I/O. Background tasks refresh them, each on its own period
(``health.cacheSeconds``, ``routing.callHistoryCacheSeconds``, 60 s for quality).

Snapshots also pass through a :class:`SignalStore`. The in-process store is a
dict; a shared store (Redis) lets several workers share one read: a refresher
that finds a snapshot younger than its period in the store takes it instead
of querying the database.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import describe_error
from gateway.domain import GatewayConfig, HealthSample, HistoryFigures, HistoryKey
from gateway.signals.health import read_health
from gateway.signals.history import read_call_history
from gateway.signals.quality import read_quality

log = logging.getLogger(__name__)

T = TypeVar("T")

HealthMap = dict[str, HealthSample]
QualityMap = dict[tuple[str, str], float]
HistoryMap = dict[HistoryKey, HistoryFigures]

QUALITY_REFRESH_SECONDS = 60.0


@dataclass(frozen=True, slots=True)
class Snapshot(Generic[T]):
    value: T
    taken_at: datetime  # aware UTC: when the database was read


class SignalStore(Protocol):
    async def get_health(self) -> Snapshot[HealthMap] | None: ...
    async def set_health(self, snapshot: Snapshot[HealthMap]) -> None: ...
    async def get_quality(self) -> Snapshot[QualityMap] | None: ...
    async def set_quality(self, snapshot: Snapshot[QualityMap]) -> None: ...
    async def get_history(self) -> Snapshot[HistoryMap] | None: ...
    async def set_history(self, snapshot: Snapshot[HistoryMap]) -> None: ...


class InProcessSignalStore:
    """The default store: this process's memory, shared with no one."""

    def __init__(self) -> None:
        self._health: Snapshot[HealthMap] | None = None
        self._quality: Snapshot[QualityMap] | None = None
        self._history: Snapshot[HistoryMap] | None = None

    async def get_health(self) -> Snapshot[HealthMap] | None:
        return self._health

    async def set_health(self, snapshot: Snapshot[HealthMap]) -> None:
        self._health = snapshot

    async def get_quality(self) -> Snapshot[QualityMap] | None:
        return self._quality

    async def set_quality(self, snapshot: Snapshot[QualityMap]) -> None:
        self._quality = snapshot

    async def get_history(self) -> Snapshot[HistoryMap] | None:
        return self._history

    async def set_history(self, snapshot: Snapshot[HistoryMap]) -> None:
        self._history = snapshot


def _utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Source(Generic[T]):
    name: str
    period: float
    read: Callable[[datetime], Awaitable[T]]
    load: Callable[[], Awaitable[Snapshot[T] | None]]
    save: Callable[[Snapshot[T]], Awaitable[None]]
    apply: Callable[[Snapshot[T] | None], None]  # None: the read failed


class SignalRefresher:
    def __init__(
        self,
        engine: AsyncEngine,
        config: GatewayConfig,
        clock: Callable[[], datetime] = _utc_now,
        *,
        store: SignalStore | None = None,
        quality_seconds: float = QUALITY_REFRESH_SECONDS,
    ) -> None:
        self._engine = engine
        self._config = config
        self._clock = clock
        self._store: SignalStore = store or InProcessSignalStore()
        self.health: HealthMap = {}
        self.quality: QualityMap = {}
        self.history: HistoryMap | None = None
        self.health_taken_at: datetime | None = None
        self.quality_taken_at: datetime | None = None
        self.history_taken_at: datetime | None = None
        self.health_read_failures = 0
        self.quality_read_failures = 0
        self.history_read_failures = 0
        self._sources = self._build_sources(quality_seconds)
        self._tasks: list[asyncio.Task[None]] = []

    @property
    def history_enabled(self) -> bool:
        """The history is read only with ``routing.callHistory`` on and telemetry enabled."""
        return self._config.routing.call_history and self._config.telemetry.enabled

    async def start(self) -> None:
        """Read every signal once, then keep them fresh in the background."""
        if self._tasks:
            return
        await self.refresh_now()
        self._tasks = [
            asyncio.create_task(self._loop(source), name=f"signals-{source.name}")
            for source in self._sources
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    async def refresh_now(self) -> None:
        """Read every signal from the database now, ignoring the store's snapshots."""
        for source in self._sources:
            await self._refresh(source, reuse_shared=False)

    async def refresh_due(self) -> None:
        """What each background tick does: take the store's snapshot when it is younger
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
        now = self._clock()
        try:
            shared = await source.load() if reuse_shared else None
            if shared is not None and now - shared.taken_at < timedelta(seconds=source.period):
                source.apply(shared)  # another worker read it recently
                return
            snapshot = Snapshot(await source.read(now), now)
            await source.save(snapshot)
        except Exception as exc:  # a failed read degrades the signal, never a call
            log.warning("signals: %s read failed (%s)", source.name, describe_error(exc))
            source.apply(None)
            return
        source.apply(snapshot)

    def _apply_health(self, snapshot: Snapshot[HealthMap] | None) -> None:
        if snapshot is None:
            # Keep the last health: a transient failure should not erase every provider's state.
            self.health_read_failures += 1
            return
        self.health, self.health_taken_at = snapshot.value, snapshot.taken_at

    def _apply_quality(self, snapshot: Snapshot[QualityMap] | None) -> None:
        if snapshot is None:
            self.quality_read_failures += 1
            return
        self.quality, self.quality_taken_at = snapshot.value, snapshot.taken_at

    def _apply_history(self, snapshot: Snapshot[HistoryMap] | None) -> None:
        if snapshot is None:
            # ROUTING.md: a failed read is treated as callHistory off for the decision.
            self.history_read_failures += 1
            self.history, self.history_taken_at = None, None
            return
        self.history, self.history_taken_at = snapshot.value, snapshot.taken_at
