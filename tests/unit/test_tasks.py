"""Background tasks under supervision: a crash is logged with its traceback, counted and
the loop started again after a backoff; a loop that returns is done; cancelling stops it."""

from __future__ import annotations

import asyncio
import logging

import pytest

from gateway.tasks import Supervisor, next_backoff


async def test_a_crashing_loop_is_logged_counted_and_restarted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    restarted: list[str] = []
    runs = 0

    async def flaky() -> None:
        nonlocal runs
        runs += 1
        if runs < 3:
            raise ValueError("a value nobody foresaw")
        await asyncio.Event().wait()  # the third run keeps going

    tasks = Supervisor(restarted.append, first_backoff_seconds=0.01)
    caplog.set_level(logging.ERROR, logger="gateway.tasks")
    task = tasks.spawn("flaky", flaky)
    for _ in range(500):
        if runs == 3:
            break
        await asyncio.sleep(0.01)
    assert runs == 3 and not task.done()
    assert restarted == ["flaky", "flaky"] and tasks.restarts["flaky"] == 2
    crashes = [r for r in caplog.records if "background task flaky crashed" in r.getMessage()]
    assert len(crashes) == 2 and all(r.exc_info for r in crashes)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_loop_that_returns_is_not_restarted() -> None:
    runs = 0

    async def once() -> None:
        nonlocal runs
        runs += 1

    tasks = Supervisor(first_backoff_seconds=0.01)
    await tasks.spawn("once", once)
    await asyncio.sleep(0.05)
    assert runs == 1 and tasks.restarts["once"] == 0


def test_the_backoff_doubles_while_runs_crash_fast_and_starts_over_after_a_long_run() -> None:
    assert next_backoff(0.5, 0.0, 1.0, 30.0) == 1.0
    assert next_backoff(1.0, 0.1, 1.0, 30.0) == 2.0
    assert next_backoff(16.0, 0.1, 1.0, 30.0) == 30.0
    assert next_backoff(30.0, 0.1, 1.0, 30.0) == 30.0
    assert next_backoff(30.0, 45.0, 1.0, 30.0) == 1.0
