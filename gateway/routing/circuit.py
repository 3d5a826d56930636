"""Per-provider circuit breakers: pure state, the clock is passed in.

closed --(failure_threshold consecutive retryable failures)--> open
open --(cooldown elapsed, first try_acquire)--> half-open: exactly one probe runs
half-open --probe succeeds--> closed;  --probe fails--> open again (a fresh cooldown)

A probe whose verdict never arrives (the caller was cancelled) does not wedge
the circuit: after another cooldown a new probe is admitted.
Not thread-safe: it lives on the event loop's single thread.

``adopt_open`` and ``close`` apply a state learned elsewhere (another process's
circuit, shared through Redis: gateway/circuits); ``opened_at`` reads it back.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CircuitState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


@dataclass(slots=True)
class _Circuit:
    failures: int = 0
    opened_at: float | None = None  # None: closed
    probe_started_at: float | None = None  # set while the half-open probe is in flight


class CircuitBreakers:
    def __init__(self, failure_threshold: int, cooldown_seconds: float) -> None:
        if failure_threshold < 1:
            raise ValueError("failure_threshold must be at least 1")
        if cooldown_seconds < 0:
            raise ValueError("cooldown_seconds must not be negative")
        self._threshold = failure_threshold
        self._cooldown = cooldown_seconds
        self._circuits: dict[str, _Circuit] = {}

    def state(self, provider_id: str, now: float) -> CircuitState:
        circuit = self._circuits.get(provider_id)
        if circuit is None or circuit.opened_at is None:
            return CircuitState.CLOSED
        if circuit.probe_started_at is not None and not self._due(circuit.probe_started_at, now):
            return CircuitState.HALF_OPEN
        return CircuitState.OPEN

    def reopens_at(self, provider_id: str) -> float | None:
        """When an open circuit's cooldown ends (the clock's time), None when closed."""
        circuit = self._circuits.get(provider_id)
        if circuit is None or circuit.opened_at is None:
            return None
        since = circuit.probe_started_at or circuit.opened_at
        return since + self._cooldown

    def failures(self, provider_id: str) -> int:
        """Consecutive retryable failures counted since the last success."""
        circuit = self._circuits.get(provider_id)
        return circuit.failures if circuit is not None else 0

    def open_providers(self, now: float) -> frozenset[str]:
        """Providers whose calls would be refused now (routing marks them PROVIDER_UNAVAILABLE).

        A circuit whose cooldown has elapsed and whose probe slot is free is not listed,
        so a decision can pick it and the call becomes the probe via try_acquire.
        """
        return frozenset(pid for pid, c in self._circuits.items() if self._refuses(c, now))

    def try_acquire(self, provider_id: str, now: float) -> bool:
        """May a call go to this provider now? False means refuse it (``circuit_open``)."""
        circuit = self._circuits.get(provider_id)
        if circuit is None or circuit.opened_at is None:
            return True
        if self._refuses(circuit, now):
            return False
        circuit.probe_started_at = now  # this call is the one half-open probe
        return True

    def release(self, provider_id: str) -> None:
        """The call that took the half-open trial sent nothing (the gateway refused it
        first): the trial slot is free again, the circuit's state unchanged."""
        circuit = self._circuits.get(provider_id)
        if circuit is not None:
            circuit.probe_started_at = None

    def record_success(self, provider_id: str) -> bool:
        """The provider answered; True when that closed an open circuit (the probe won)."""
        circuit = self._circuits.get(provider_id)
        if circuit is None:
            return False
        was_open = circuit.opened_at is not None
        circuit.failures = 0
        circuit.opened_at = None
        circuit.probe_started_at = None
        return was_open

    def opened_at(self, provider_id: str) -> float | None:
        """When the provider's circuit opened (the clock passed in), None when closed."""
        circuit = self._circuits.get(provider_id)
        return None if circuit is None else circuit.opened_at

    def opened(self) -> dict[str, float]:
        """Every open circuit (half-open ones included) and when it opened."""
        return {pid: c.opened_at for pid, c in self._circuits.items() if c.opened_at is not None}

    def adopt_open(self, provider_id: str, opened_at: float) -> None:
        """Open the circuit as of ``opened_at`` (a cooldown from then), as another process
        opened it; a probe this process had in flight no longer holds the slot."""
        circuit = self._circuits.setdefault(provider_id, _Circuit())
        circuit.failures = max(circuit.failures, self._threshold)
        circuit.opened_at = opened_at
        circuit.probe_started_at = None

    def close(self, provider_id: str) -> bool:
        """Close the circuit, as another process's probe succeeded; True when it was open."""
        return self.record_success(provider_id)

    @property
    def cooldown_seconds(self) -> float:
        return self._cooldown

    def record_failure(self, provider_id: str, now: float) -> bool:
        """One retryable failure (a retry's failure counts too); True when it opened the
        circuit (the threshold reached, or the half-open probe failed)."""
        circuit = self._circuits.setdefault(provider_id, _Circuit())
        if circuit.probe_started_at is not None:
            # The half-open probe failed: open again for a fresh cooldown.
            circuit.opened_at = now
            circuit.probe_started_at = None
            return True
        circuit.failures += 1
        if circuit.opened_at is None and circuit.failures >= self._threshold:
            circuit.opened_at = now
            return True
        return False

    def _refuses(self, circuit: _Circuit, now: float) -> bool:
        if circuit.opened_at is None:
            return False
        if circuit.probe_started_at is not None:
            return not self._due(circuit.probe_started_at, now)
        return not self._due(circuit.opened_at, now)

    def _due(self, since: float, now: float) -> bool:
        return now - since >= self._cooldown
