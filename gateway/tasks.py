"""Background tasks run under supervision (docs/operations.md, "Background tasks").

Every long-running loop of a process (the telemetry writer, retention, signal refreshes,
circuit sync, budget upkeep, cache purge, the config watcher, the metrics gauges) is
started through :meth:`Supervisor.spawn`. A loop that raises is logged with its
traceback, counted (``gateway_background_task_restarts_total{task}``) and started again
after a backoff (1 s, doubling to 30 s; back to 1 s once a run lasted 30 s): a bug or a
value nobody foresaw costs a few seconds of that loop, never the loop for the rest of
the process's life. A loop that returns has finished and is not restarted; cancelling
the task (``stop``) stops it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

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
