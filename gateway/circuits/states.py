"""The circuit-state interface the pipeline uses, and the in-process implementation.

The calls on a request's path (``open_providers``, ``try_acquire``, ``record_*``) are
synchronous and do no I/O in every implementation: a shared implementation keeps a
local copy and exchanges changes in the background (docs/operations.md, "What is shared
between processes").
"""

from __future__ import annotations

from typing import Protocol

from gateway.routing.circuit import CircuitBreakers, CircuitState


class CircuitStates(Protocol):
    @property
    def cooldown_seconds(self) -> float: ...

    def state(self, provider_id: str, now: float) -> CircuitState: ...

    def reopens_at(self, provider_id: str) -> float | None: ...

    def failures(self, provider_id: str) -> int: ...

    def open_providers(self, now: float) -> frozenset[str]: ...

    def try_acquire(self, provider_id: str, now: float) -> bool: ...

    def release(self, provider_id: str) -> None: ...

    def record_success(self, provider_id: str) -> bool: ...

    def record_failure(self, provider_id: str, now: float) -> bool: ...

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


class InProcessCircuits(CircuitBreakers):
    """Each process's own circuits, opened by its own failures only."""

    async def start(self) -> None:
        return None

    async def stop(self) -> None:
        return None
