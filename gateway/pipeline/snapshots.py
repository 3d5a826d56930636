"""Build the routing snapshot from the refresher's signal readings: a memory read, never a
query."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Protocol

from gateway.circuits import CircuitStates
from gateway.domain.settings import GatewayConfig
from gateway.domain.signals import HealthSample, HistoryFigures, HistoryKey
from gateway.routing.health import health_score
from gateway.routing.snapshot import Snapshot


class SignalSource(Protocol):
    """The latest measurements, refreshed off the request path."""

    @property
    def health(self) -> Mapping[str, HealthSample]: ...

    @property
    def quality(self) -> Mapping[tuple[str, str], float]: ...

    @property
    def history(self) -> Mapping[HistoryKey, HistoryFigures] | None: ...


class SnapshotSource:
    def __init__(
        self, config: GatewayConfig, signals: SignalSource, breakers: CircuitStates
    ) -> None:
        self._config = config
        self._signals = signals
        self._breakers = breakers
        self._key: tuple[object, object, object, frozenset[str]] | None = None
        self._snapshot: Snapshot | None = None
        self._health: dict[str, float] = {}

    def health_scores(self) -> Mapping[str, float]:
        self.snapshot()
        return self._health

    def snapshot(self) -> Snapshot:
        open_circuits = self._breakers.open_providers(time.monotonic())
        signals = self._signals
        # The refresher replaces its maps on every read, so identity tells a new read. The
        # key holds the maps themselves: an id() could be reused once a map is freed.
        key = (signals.health, signals.quality, signals.history, open_circuits)
        if self._snapshot is not None and self._key is not None and _same(key, self._key):
            return self._snapshot
        config = self._config
        self._health = {
            pid: score
            for pid, sample in self._signals.health.items()
            if (score := health_score(sample)) is not None
        }
        reads_history = config.routing.call_history and config.telemetry.enabled
        self._snapshot = Snapshot(
            models=config.models,
            providers=config.providers,
            routing=config.routing,
            health=self._health,
            quality=self._signals.quality,
            history=self._signals.history if reads_history else None,
            open_circuits=open_circuits,
            telemetry_enabled=config.telemetry.enabled,
        )
        self._key = key
        return self._snapshot


def _same(a: tuple[object, object, object, frozenset[str]], b: tuple[object, ...]) -> bool:
    return a[0] is b[0] and a[1] is b[1] and a[2] is b[2] and a[3] == b[3]
