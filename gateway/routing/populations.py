"""Which telemetry rows each routing signal counts (docs/routing.md#call-history,
docs/routing.md#health): one definition for the row-based reads, the hourly rollup
that the telemetry writer keeps, and the migration that fills it."""

from __future__ import annotations

from gateway.domain.failures import ErrorClass

# Failures that are not the provider's: the caller's own (an upstream 4xx other than
# 408/429, a hang-up) and the gateway's (an internal error: a bug of ours must never lower a
# provider's health for every tenant). Plain strings (the members' values): the column
# holds the value.
NOT_PROVIDER_FAULTS: tuple[str, ...] = (
    ErrorClass.UPSTREAM_4XX.value,
    ErrorClass.CLIENT_DISCONNECTED.value,
    ErrorClass.INTERNAL_ERROR.value,
    ErrorClass.UNTRANSLATABLE.value,  # refused by the gateway's translation: nothing sent
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
    """Rows of a first-attempted provider, uncached, not failed by another's fault."""
    return provider is not None and not cache_hit and error_class not in NOT_PROVIDER_FAULTS
