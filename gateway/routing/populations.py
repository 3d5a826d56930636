"""Which telemetry rows each routing signal counts (docs/routing.md#call-history,
docs/routing.md#health): one definition for the row-based reads, the hourly rollup
that the telemetry writer keeps, and the migration that fills it."""

from __future__ import annotations

from gateway.domain.failures import ErrorClass

# Failures by the caller's own fault: an upstream 4xx other than 408/429, and a hang-up.
# Plain strings (the members' values): the column holds the value.
CALLER_FAULTS: tuple[str, ...] = (
    ErrorClass.UPSTREAM_4XX.value,
    ErrorClass.CLIENT_DISCONNECTED.value,
)


def in_call_history(
    *,
    success: bool,
    fallback_attempts: int,
    cache_hit: bool,
    served_provider: str | None,
    served_model: str | None,
) -> bool:
    """First-attempt, uncached successes with a serving provider and model."""
    return (
        bool(success)
        and fallback_attempts == 0
        and not cache_hit
        and served_provider is not None
        and served_model is not None
    )


def in_health(*, provider: str | None, cache_hit: bool, error_class: str | None) -> bool:
    """Rows of a first-attempted provider, uncached, not failed by the caller's fault."""
    return provider is not None and not cache_hit and error_class not in CALLER_FAULTS
