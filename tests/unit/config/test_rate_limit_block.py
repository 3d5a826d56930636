import msgspec
import pytest

from gateway.config.convert import to_struct
from gateway.config.errors import Problems
from gateway.config.schema import RateLimitSchema
from gateway.config.sections import to_rate_limit
from gateway.domain.limits import RateLimit


def test_a_rate_limit_block_becomes_the_domain_limit() -> None:
    entry = msgspec.convert(
        {"requestsPerMinute": 100, "tokensPerMinute": 5000, "concurrent": 5}, RateLimitSchema
    )
    assert to_rate_limit(entry) == RateLimit(100, 5000, 5)


def test_an_empty_block_is_no_limit() -> None:
    assert to_rate_limit(msgspec.convert({}, RateLimitSchema)) is None
    assert to_rate_limit(None) is None


@pytest.mark.parametrize("field", ["requestsPerMinute", "tokensPerMinute", "concurrent"])
def test_a_limit_must_be_positive(field: str) -> None:
    problems = Problems()
    to_struct({field: 0}, RateLimitSchema, problems, "rateLimit")
    assert any(f"rateLimit.{field}" in line for line in problems.lines())
