"""The provider health formula (docs/routing.md#health): pure, the window is read elsewhere."""

from __future__ import annotations

from gateway.domain.signals import HealthSample

SUCCESS_WEIGHT = 0.8
LATENCY_WEIGHT = 0.2
LATENCY_CEILING_MS = 5000.0


def health_score(sample: HealthSample) -> float | None:
    """``0.8 · successes/samples + 0.2 · (1 − min(1, avgLatency / 5000))``; None without samples.

    A null latency (no first-attempt row) costs nothing, as the earlier record pins.
    """
    if sample.samples <= 0:
        return None
    success_rate = sample.successes / sample.samples
    if sample.avg_latency_ms is None:
        latency_part = 1.0
    else:
        latency_part = 1.0 - min(1.0, max(0.0, sample.avg_latency_ms) / LATENCY_CEILING_MS)
    return SUCCESS_WEIGHT * success_rate + LATENCY_WEIGHT * latency_part
