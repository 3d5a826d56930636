"""Background tasks run under supervision (docs/operations.md, "Background tasks").

Every long-running loop of a process (the telemetry writer, retention, signal refreshes,
circuit sync, budget upkeep, cache purge, the config watcher, the metrics gauges) is
started through :meth:`Supervisor.spawn`. A loop that raises is logged with its
traceback, counted (``gateway_background_task_restarts_total{task}``) and started again
after a backoff (1 s, doubling to 30 s; back to 1 s once a run lasted 30 s): a bug or a
value nobody foresaw costs a few seconds of that loop, never the loop for the rest of
the process's life. A loop that returns has finished and is not restarted; its
owner's ``stop`` ends it with :func:`cancel_and_wait`, which cancels again a task whose
cancellation a library swallowed (Python 3.11's ``wait_for``, below).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

log = logging.getLogger(__name__)

FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 30.0


def next_backoff(previous: float, ran_seconds: float, first: float, most: float) -> float:
    """The wait before the next restart: doubling while runs crash quickly, the first
    again after a run that lasted ``most`` (a crash then is news, not a crash loop)."""
    if ran_seconds >= most:
        return first
    return min(previous * 2, most)


class Supervisor:
    def __init__(
        self,
        on_restart: Callable[[str], None] | None = None,
        *,
        first_backoff_seconds: float = FIRST_BACKOFF_SECONDS,
        max_backoff_seconds: float = MAX_BACKOFF_SECONDS,
    ) -> None:
        self._on_restart = on_restart
        self._first = first_backoff_seconds
        self._most = max_backoff_seconds
        self.restarts: Counter[str] = Counter()  # by task name, since start

    def spawn(self, name: str, run: Callable[[], Awaitable[None]]) -> asyncio.Task[None]:
        """Run ``run()`` as the task ``name``, again each time it raises."""
        return asyncio.create_task(self._supervise(name, run), name=name)

    async def _supervise(self, name: str, run: Callable[[], Awaitable[None]]) -> None:
        delay = self._first / 2  # the first crash waits ``first``
        while True:
            started = time.monotonic()
            try:
                await run()
                return
            except Exception:  # CancelledError is not one: stop() still stops it
                ran = time.monotonic() - started
                delay = next_backoff(delay, ran, self._first, self._most)
                log.exception("background task %s crashed; restarting in %.1f s", name, delay)
                self.restarts[name] += 1
                if self._on_restart is not None:
                    self._on_restart(name)
            await asyncio.sleep(delay)


# Stopping. On Python 3.11, ``asyncio.wait_for`` swallows a cancellation that lands while
# the future it waits on completes (CPython gh-86296, fixed in 3.12): it returns the
# result and the task goes on as if it had never been cancelled. redis-py sends every
# command through ``wait_for`` when it has a socket timeout (the gateway's clients have
# 1 s), so a loop cancelled while a command of it is on its way is, most of the time, not
# stopped, and ``await task`` after ``task.cancel()`` then waits for ever: the process
# never got to writing its last telemetry rows. Hence: cancel again while it still runs.
RECANCEL_SECONDS = 0.1
STOP_BOUND_SECONDS = 5.0


async def cancel_and_wait(
    *tasks: asyncio.Task[Any] | None, bound: float = STOP_BOUND_SECONDS
) -> None:
    """Cancel ``tasks`` (None: none) and wait until each has ended, cancelling again
    every 0.1 s the ones still running (a swallowed cancellation, above; a loop's own
    clean-up shorter than that is not cut). One still running after ``bound`` seconds is
    logged by name and left behind; one that ended by raising is logged."""
    pending = {task for task in tasks if task is not None}
    for task in pending:
        task.cancel()
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound
    ended: set[asyncio.Task[Any]] = set()
    while pending:
        left = deadline - loop.time()
        if left <= 0:
            names = ", ".join(sorted(task.get_name() for task in pending))
            log.error(
                "background task(s) %s still running %.0f s after being cancelled; left",
                names,
                bound,
            )
            break
        done, pending = await asyncio.wait(pending, timeout=min(RECANCEL_SECONDS, left))
        ended |= done
        for task in pending:
            task.cancel()
    for task in ended:
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "background task %s ended by raising", task.get_name(), exc_info=task.exception()
            )


async def wait_event(event: asyncio.Event, seconds: float) -> bool:
    """Wait until ``event`` is set or ``seconds`` have passed; whether it is set. With
    ``asyncio.timeout``, not ``wait_for``: a cancellation always ends the wait (above)."""
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(seconds):
            await event.wait()
    return event.is_set()
