"""rateLimit blocks and rateLimits: read where the docs say, misspellings named."""

from __future__ import annotations

from gateway.domain.limits import RateLimit

from .support import load, problems_of

FILE = """
providers: [{id: demo, adapter: echo}]
models:
  - {id: m, provider: demo, rateLimit: {requestsPerMinute: 60, concurrent: 2}}
configurations:
  - {id: c, mode: fixed, model: m, rateLimit: {tokensPerMinute: 9000}}
auth:
  allowUnauthenticated: true
  keys: []
"""


def test_limits_on_models_configurations_and_the_outage_setting_are_read() -> None:
    config = load(FILE + "rateLimits: {onRedisOutage: refuse}\n")
    assert config.model("m").rate_limit == RateLimit(requests_per_minute=60, concurrent=2)
    assert config.configurations["c"].rate_limit == RateLimit(tokens_per_minute=9000)
    assert config.rate_limits.on_redis_outage == "refuse"
    assert load(FILE).rate_limits.on_redis_outage == "local"


def test_an_empty_block_is_no_limit() -> None:
    config = load(FILE.replace("rateLimit: {tokensPerMinute: 9000}", "rateLimit: {}"))
    assert config.configurations["c"].rate_limit is None


def test_misspellings_get_the_nearest_key() -> None:
    problems = problems_of(FILE.replace("rateLimit: {tokens", "rateLimt: {tokens"))
    assert problems == ["configurations[0].rateLimt: unknown key (did you mean 'rateLimit'?)"]
    problems = problems_of(FILE.replace("requestsPerMinute", "requestPerMinute"))
    assert problems == [
        "models[0].rateLimit.requestPerMinute: unknown key (did you mean 'requestsPerMinute'?)"
    ]
    assert problems_of(FILE + "rateLimits: {onRedisOutage: later}\n")
    assert problems_of(FILE.replace("concurrent: 2", "concurrent: 0"))
