import pytest

from gateway.domain.signals import HealthSample
from gateway.routing.health import health_score


@pytest.mark.parametrize(
    ("samples", "successes", "latency", "expected"),
    [
        (10, 9, 200.0, 0.912),
        (4, 0, 1000.0, 0.16),
        (4, 0, None, 0.2),
        (2, 2, 50_000.0, 0.8),
        (5, 5, 0.0, 1.0),
    ],
)
def test_health_score_pinned_figures(
    samples: int, successes: int, latency: float | None, expected: float
) -> None:
    sample = HealthSample(samples=samples, successes=successes, avg_latency_ms=latency)
    assert health_score(sample) == pytest.approx(expected, abs=1e-12)


def test_health_without_samples_is_no_signal() -> None:
    assert health_score(HealthSample(samples=0, successes=0, avg_latency_ms=None)) is None


def test_health_null_latency_costs_nothing() -> None:
    with_latency = health_score(HealthSample(samples=4, successes=4, avg_latency_ms=None))
    assert with_latency == pytest.approx(1.0)


def test_health_latency_saturates_at_five_seconds() -> None:
    at_ceiling = health_score(HealthSample(samples=1, successes=1, avg_latency_ms=5000.0))
    beyond = health_score(HealthSample(samples=1, successes=1, avg_latency_ms=60_000.0))
    assert at_ceiling == beyond == pytest.approx(0.8)
