"""Stopping background tasks (gateway.tasks): a cancellation a library swallowed is sent
again, so ``stop`` ends; a task that never ends is named in the log and left after the
bound; a wait on an event always ends on a cancellation, even one landing as the event
is set (Python 3.11's ``wait_for`` returns then, CPython gh-86296)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os

import pytest

from gateway.db.redis_client import redis_client
from gateway.tasks import Supervisor, cancel_and_wait, wait_event

REDIS = os.environ.get("GATEWAY_TEST_REDIS_URL")


async def test_a_task_that_swallowed_its_cancellation_is_cancelled_again() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                if swallowed == 2:
                    raise
                swallowed += 1  # as a library that returned a result instead

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    await asyncio.wait_for(cancel_and_wait(task), 3)  # the bound of this test, not a target
    assert task.cancelled() and swallowed == 2


async def test_a_task_that_never_ends_is_named_and_left_after_the_bound(
    caplog: pytest.LogCaptureFixture,
) -> None:
    release = asyncio.Event()

    async def deaf() -> None:
        while not release.is_set():
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.sleep(30)

    caplog.set_level(logging.ERROR, logger="gateway.tasks")
    task = asyncio.create_task(deaf(), name="deaf-loop")
    quiet = asyncio.create_task(asyncio.sleep(30), name="quiet-loop")
    await asyncio.sleep(0)
    await cancel_and_wait(task, quiet, None, bound=0.3)
    assert quiet.cancelled() and not task.done()
    [line] = [r.getMessage() for r in caplog.records]
    assert "deaf-loop still running 0 s after being cancelled" in line
    release.set()
    task.cancel()
    await asyncio.wait({task}, timeout=3)
    assert task.done()


async def test_a_task_that_ended_by_raising_is_logged_not_raised(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def broken() -> None:
        raise ValueError("a bug in a loop")

    caplog.set_level(logging.ERROR, logger="gateway.tasks")
    task = asyncio.create_task(broken(), name="broken-loop")
    await asyncio.sleep(0)
    await cancel_and_wait(task)
    [record] = caplog.records
    assert record.getMessage() == "background task broken-loop ended by raising"
    assert record.exc_info is not None and record.exc_info[0] is ValueError


async def test_a_cancellation_landing_as_the_event_is_set_still_ends_the_wait() -> None:
    event = asyncio.Event()
    waiter = asyncio.create_task(wait_event(event, 30))
    await asyncio.sleep(0)  # waiting now
    event.set()  # the event's waiter is woken ...
    waiter.cancel()  # ... and the cancellation lands in the same turn of the loop
    done, _ = await asyncio.wait({waiter}, timeout=3)
    assert done and waiter.cancelled()


async def test_wait_event_says_whether_the_event_was_set() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    asyncio.get_running_loop().call_later(0.01, event.set)
    assert await wait_event(event, 30) is True


@pytest.mark.skipif(not REDIS, reason="GATEWAY_TEST_REDIS_URL is not set")
async def test_a_loop_of_redis_commands_stops_every_time() -> None:
    """The real case: redis-py swallows most cancellations that land while a command is
    being sent; a plain cancel-then-await of this loop waits for ever most times."""
    assert REDIS is not None
    client = redis_client(REDIS)
    supervisor = Supervisor()
    commands = 0

    async def busy() -> None:
        nonlocal commands
        while True:
            await client.get("gateway:test:task-stop")
            commands += 1

    try:
        for _ in range(10):
            task = supervisor.spawn("busy-redis", busy)
            await asyncio.sleep(0.005)
            await asyncio.wait_for(cancel_and_wait(task), 5)  # the test's bound
            assert task.done()
        assert commands > 10  # the loop ran commands when it was cancelled
    finally:
        await client.aclose()
