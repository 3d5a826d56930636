"""The lingering close's time bounds (docs/configuration.md, "server"): 30 s in all,
5 s without a read, the sooner of the two."""

from __future__ import annotations

from gateway.api.connection import (
    LINGER_IDLE_SECONDS,
    LINGER_SECONDS,
    MIN_LINGER_BYTES,
    EdgeLimits,
    linger_left,
)
from gateway.domain.settings import ServerSettings


def test_the_bounds_are_nginx_s() -> None:
    assert (LINGER_SECONDS, LINGER_IDLE_SECONDS) == (30.0, 5.0)


def test_a_client_that_keeps_sending_is_closed_at_the_total_time() -> None:
    started = 100.0
    assert linger_left(started, last_read=128.0, now=128.0) == 2.0
    assert linger_left(started, last_read=129.9, now=130.0) == 0.0


def test_a_client_that_goes_quiet_is_closed_after_the_idle_time() -> None:
    assert linger_left(100.0, last_read=101.0, now=104.0) == 2.0
    assert linger_left(100.0, last_read=101.0, now=106.5) < 0


def test_the_byte_cap_is_a_gibibyte_or_the_body_cap() -> None:
    default = EdgeLimits.from_settings(ServerSettings())
    assert default.linger_bytes == MIN_LINGER_BYTES == 1 << 30
    larger = EdgeLimits.from_settings(ServerSettings(max_body_bytes=2 << 30))
    assert larger.linger_bytes == 2 << 30
