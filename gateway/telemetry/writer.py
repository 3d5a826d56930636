"""The telemetry writer on the serving loop (``telemetry.writer: inline``): a bounded queue,
batched inserts, never on the request path.

``submit`` appends to an in-memory queue and returns; it never blocks, never
raises, never awaits. A background task takes up to ``batch_size`` records
(waiting at most ``flush_interval`` for a batch to fill) and writes them with
:class:`gateway.telemetry.batches.BatchWriter`: the rows, their ``usage_daily`` and
rollup increments and the batch's key in one transaction, retried through an outage,
a refused row set aside. While the batch waits, new records queue up to ``max_queue``;
beyond that they are dropped and counted. The default writer runs the same batches in a
process of its own (:mod:`gateway.telemetry.process_writer`), off the serving loop.
Retention (deleting old rows) is :class:`gateway.telemetry.retention.Retention`'s.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from collections import deque
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.tasks import Supervisor, cancel_and_wait, wait_event
from gateway.telemetry.batches import MAX_PIECE, BatchWriter, Entry, RetryPolicy, pieces
from gateway.telemetry.records import TelemetryRecord

__all__ = ["MAX_PIECE", "TelemetryWriter", "WriterSettings", "pieces"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class WriterSettings:
    enabled: bool = True  # telemetry.enabled: off, submit() drops every record uncounted
    max_queue: int = 10000  # records waiting beyond this are dropped and counted
    batch_size: int = 500  # records per insert
    flush_interval: float = 0.2  # seconds a batch may wait to fill
    retry_attempts: int = 45  # with the capped backoff: about five minutes of outage
    retry_delay: float = 0.25  # seconds before the first retry of a failed batch, doubling
    retry_max_delay: float = 8.0
    stop_timeout: float = 10.0  # seconds stop() waits for the queue to drain
    # Seconds a writer process may hold unacknowledged batches without an answer (an
    # acknowledgement, a failed attempt) before it is taken as hung, killed and replaced.
    hang_timeout: float = 30.0

    @property
    def retry(self) -> RetryPolicy:
        return RetryPolicy(self.retry_attempts, self.retry_delay, self.retry_max_delay)


class BatchKeys:
    """Keys no other batch of any process has: this writer's random prefix, a count."""

    def __init__(self) -> None:
        self._prefix = uuid.uuid4().hex
        self._count = itertools.count(1)

    def next(self) -> str:
        return f"{self._prefix}:{next(self._count)}"


class QueueFront:
    """What both writers' serving side shares: ``submit`` appends to a bounded queue and
    returns (never blocks, never raises, never awaits); past ``max_queue`` records waiting
    (``queue_depth``) a record is dropped and counted."""

    _enabled: bool
    _max_queue: int
    _batch_size: int
    _queue: deque[TelemetryRecord]
    _wake: asyncio.Event
    _accepted: int
    dropped: int

    @property
    def queue_depth(self) -> int:
        return len(self._queue)

    @property
    def enabled(self) -> bool:
        return self._enabled

    def submit(self, record: TelemetryRecord) -> None:
        """Queue one record for writing; drop and count it when the queue is full."""
        if not self._enabled:
            return
        if self.queue_depth >= self._max_queue:
            self.dropped += 1
            return
        self._queue.append(record)
        self._accepted += 1
        depth = len(self._queue)
        if depth == 1 or depth >= self._batch_size:
            self._wake.set()


class TelemetryWriter(QueueFront):
    def __init__(
        self,
        engine: AsyncEngine,
        settings: WriterSettings | None = None,
        *,
        tasks: Supervisor | None = None,
    ) -> None:
        settings = settings or WriterSettings()
        self._tasks = tasks or Supervisor()
        self._batches = BatchWriter(engine, settings.retry)
        self._keys = BatchKeys()
        self._max_queue = settings.max_queue
        self._batch_size = settings.batch_size
        self._flush_interval = settings.flush_interval
        self._enabled = settings.enabled
        self._stop_timeout = settings.stop_timeout
        self._queue: deque[TelemetryRecord] = deque()
        self._wake = asyncio.Event()
        self._settled_changed = asyncio.Condition()
        self._accepted = 0  # records taken into the queue
        self._settled = 0  # of those: written or given up on
        self._in_flight = 0
        self._urgent = 0  # flush() callers waiting: do not wait for a batch to fill
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self.written = 0
        self.dropped = 0
        self.rejected = 0  # rows set aside for a value the database refused (in dropped too)

    @property
    def failed_batches(self) -> int:
        return self._batches.failed_batches

    async def start(self) -> None:
        if not self._enabled or self._task is not None:
            return
        self._stopping = False
        self._task = self._tasks.spawn("telemetry-writer", self._run)

    async def stop(self) -> None:
        """Write everything queued, then stop; gives up after ``stop_timeout`` seconds."""
        if self._task is None:
            return
        self._stopping = True
        self._wake.set()
        try:
            async with asyncio.timeout(self._stop_timeout):
                await asyncio.shield(self._task)
        except TimeoutError:
            await cancel_and_wait(self._task)
            lost = len(self._queue) + self._in_flight
            self._queue.clear()
            await self._settle(lost, written=False)
            log.warning("telemetry writer stopped with %d rows unwritten", lost)
        self._task = None

    async def flush(self) -> None:
        """Wait until every record submitted so far is written (or given up on)."""
        target = self._accepted
        if self._task is None or self._task.done():
            while self._queue:
                await self._write(self._take_batch())
            return
        self._urgent += 1
        self._wake.set()
        try:
            async with self._settled_changed:
                await self._settled_changed.wait_for(lambda: self._settled >= target)
        finally:
            self._urgent -= 1

    async def _run(self) -> None:
        while self._queue or not self._stopping:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            if len(self._queue) < self._batch_size and not (self._stopping or self._urgent):
                # Let a batch fill for up to flush_interval: one insert for many calls.
                # Clear first: a wake-up left from while the last batch was being written
                # must not cut this wait short (that wrote one row per commit under load).
                self._wake.clear()
                await wait_event(self._wake, self._flush_interval)
            await self._write(self._take_batch())

    def _take_batch(self) -> list[TelemetryRecord]:
        count = min(self._batch_size, len(self._queue))
        return [self._queue.popleft() for _ in range(count)]

    async def _write(self, batch: list[TelemetryRecord]) -> None:
        if not batch:
            return
        self._in_flight = len(batch)
        outcome = await self._batches.write(self._keys.next(), [Entry(r) for r in batch])
        self.rejected += outcome.rejected
        await self._settle(outcome.written, written=True)
        await self._settle(outcome.dropped, written=False)

    async def _settle(self, count: int, *, written: bool) -> None:
        self._in_flight = 0
        if written:
            self.written += count
        else:
            self.dropped += count
        async with self._settled_changed:
            self._settled += count
            self._settled_changed.notify_all()
