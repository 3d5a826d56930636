"""The sign-in throttle (gateway.api.console.throttle): 5 wrong keys a minute per address,
then refused until the oldest is a minute old; a right key clears; bounded in size."""

from __future__ import annotations

from gateway.api.console.throttle import LIMIT, WINDOW_SECONDS, SignInThrottle


def test_the_limit_th_failure_throttles_until_the_oldest_leaves_the_window() -> None:
    throttle = SignInThrottle()
    reached = [throttle.failed("a", 100.0 + n) for n in range(LIMIT)]
    assert reached == [False] * (LIMIT - 1) + [True]
    assert throttle.retry_after("a", 104.0) == 56  # the first failure (at 100) is 60 s old at 160
    assert throttle.retry_after("a", 159.5) == 1
    assert throttle.retry_after("a", 160.0) is None  # one of five has left the window
    assert throttle.retry_after("b", 104.0) is None  # another address is not affected


def test_failures_spread_wider_than_the_window_never_throttle() -> None:
    throttle = SignInThrottle()
    for n in range(3 * LIMIT):
        assert throttle.failed("a", n * WINDOW_SECONDS / (LIMIT - 1)) is False
        assert throttle.retry_after("a", n * WINDOW_SECONDS / (LIMIT - 1)) is None


def test_a_right_key_clears_the_count() -> None:
    throttle = SignInThrottle()
    for n in range(LIMIT - 1):
        throttle.failed("a", float(n))
    throttle.succeeded("a")
    assert throttle.failed("a", 10.0) is False
    assert throttle.retry_after("a", 10.0) is None


def test_at_most_max_addresses_are_kept_the_least_recently_failed_dropped_first() -> None:
    throttle = SignInThrottle(limit=2, max_addresses=3)
    for n, address in enumerate(("a", "b", "c")):
        throttle.failed(address, float(n))
    throttle.failed("a", 3.0)  # a is throttled, and now the most recent
    throttle.failed("d", 4.0)  # full: b goes
    assert len(throttle) == 3
    assert throttle.retry_after("a", 5.0) is not None
    assert throttle.failed("b", 5.0) is False  # b starts again from one failure


def test_addresses_whose_failures_left_the_window_make_room_first() -> None:
    throttle = SignInThrottle(max_addresses=2)
    throttle.failed("old", 0.0)
    throttle.failed("recent", 50.0)
    throttle.failed("new", 70.0)  # "old" has left the window: dropped, "recent" kept
    assert len(throttle) == 2
    for n in range(LIMIT - 1):
        throttle.failed("recent", 71.0 + n)
    assert throttle.retry_after("recent", 80.0) is not None
