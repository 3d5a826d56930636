"""Raw measurements read from telemetry, handed to the pure routing code."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from gateway.domain.model import Operation


@dataclass(frozen=True, slots=True)
class HistoryFigures:
    """One call-history key's aggregate (serving provider id, served model id, operation)."""

    calls: int
    mean_latency_ms: float | None
    costed_calls: int
    mean_cost: Decimal | None


HistoryKey = tuple[str, str, Operation]  # (provider id, model id, operation)


@dataclass(frozen=True, slots=True)
class HealthSample:
    """One provider's health window, before the score formula is applied."""

    samples: int
    successes: int
    avg_latency_ms: float | None
