"""The seams where budgets and the response cache plug into the pipeline.

The pipeline calls these at fixed points; the implementations live in
``gateway.budgets`` and ``gateway.cache``. The null versions admit everything
and cache nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.domain.model import Configuration, Model
from gateway.domain.settings import ApiKey
from gateway.inbound import InboundRequest
from gateway.telemetry.records import TelemetryRecord


@dataclass(slots=True)
class Reservation:
    """What admission held for one call; settled once when the call ends."""

    token: object  # the implementation's own handle


class BudgetGate(Protocol):
    async def reserve(
        self,
        key: ApiKey | None,
        configuration: Configuration,
        request: InboundRequest,
        models: Callable[[], Sequence[Model]],
        *,
        fallback: bool = False,
    ) -> Reservation | None:
        """Hold the call's worst case, atomically; raise BudgetExceeded to refuse it.

        ``models`` gives the models the call may end on (the primary's, then the
        fallbacks'); it is only asked for when a budget applies. With ``fallback``
        the configuration is a fallback reached by the call: only its own budget
        is held, and charged only if it is what served.
        """
        ...

    async def count_hit(self, key: ApiKey | None, configuration: Configuration) -> None:
        """Charge a cached answer as one request; raise BudgetExceeded past a request budget."""
        ...

    async def settle(self, reservation: Reservation, record: TelemetryRecord) -> None:
        """Replace the hold by the call's actual figures (release it when nothing answered)."""
        ...


@dataclass(slots=True)
class CachedAnswer:
    body: bytes
    response_model: str | None


class ResponseCache(Protocol):
    """``key_id`` is the calling key's id (None without auth); a configuration whose cache
    is scoped to the key keeps one answer per key."""

    async def lookup(
        self, configuration: Configuration, request: InboundRequest, key_id: str | None
    ) -> CachedAnswer | None: ...

    async def store(
        self,
        configuration: Configuration,
        request: InboundRequest,
        key_id: str | None,
        answer: CachedAnswer,
    ) -> None: ...


class NoBudgets:
    async def reserve(
        self,
        key: ApiKey | None,
        configuration: Configuration,
        request: InboundRequest,
        models: Callable[[], Sequence[Model]],
        *,
        fallback: bool = False,
    ) -> Reservation | None:
        return None

    async def count_hit(self, key: ApiKey | None, configuration: Configuration) -> None:
        return None

    async def settle(self, reservation: Reservation, record: TelemetryRecord) -> None:
        return None


class NoCache:
    async def lookup(
        self, configuration: Configuration, request: InboundRequest, key_id: str | None
    ) -> CachedAnswer | None:
        return None

    async def store(
        self,
        configuration: Configuration,
        request: InboundRequest,
        key_id: str | None,
        answer: CachedAnswer,
    ) -> None:
        return None
