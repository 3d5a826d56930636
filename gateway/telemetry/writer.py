"""The background telemetry writer: a bounded queue, batched inserts, never on the request path.

``submit`` appends to an in-memory queue and returns; it never blocks, never
raises, never awaits. A background task takes up to ``batch_size`` records
(waiting at most ``flush_interval`` for a batch to fill), inserts them with one
executemany and upserts their ``usage_daily`` and rollup increments (hourly:
``telemetry_hourly``, ``telemetry_hourly_latency``, ``telemetry_hourly_histogram``;
daily: ``telemetry_daily``, ``telemetry_daily_histogram``) in the same
transaction. A database outage never fails a call: a failed batch is kept and
retried with exponential backoff, and only after ``retry_attempts`` is it
dropped and counted. A batch the database refuses for a value of one row (out
of range, a constraint: ``db.failures.is_rejected_value``) is not retried: it is
split in halves, again and again, so every other row is written and only that
row is set aside, logged by its request id and counted as dropped. While the
batch waits, new records queue up to ``max_queue``; beyond that they are dropped
and counted too. Retention (deleting old rows) is :class:`gateway.telemetry.retention.Retention`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import describe_error
from gateway.db.failures import is_rejected_value
from gateway.db.tables import telemetry
from gateway.tasks import Supervisor
from gateway.telemetry.records import TelemetryRecord, to_row
from gateway.telemetry.rollup import hourly_increments, rollup_statements
from gateway.telemetry.rollup_levels import level_increments, level_statements
from gateway.telemetry.usage_daily import upsert_statement, usage_increments

log = logging.getLogger(__name__)


def _string_limits() -> dict[str, int]:
    return {
        column.name: column.type.length
        for column in telemetry.columns
        if isinstance(column.type, String) and column.type.length
    }


# The largest piece: a multi-row statement of 32 rows binds a row's parameters at the
# cost of 256 (bench/overhead.py), and SQLite keeps every statement it prepared, per
# pooled connection and per table and size: pieces of up to 256 rows held about 20 MB
# more of them (bench/memory.py --models both: 169.7 MB after its load).
MAX_PIECE = 32


def pieces(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The rows in order, in pieces of ``MAX_PIECE`` and then of powers of two, largest
    first (75 rows: 32, 32, 8, 2, 1). On SQLite each piece is one multi-row statement
    (gateway.db.engine), and SQLite keeps each statement it has prepared: with a few
    small sizes a few small statements, not one of about a megabyte for every batch size
    seen (resident memory grew past 200 MB)."""
    found: list[list[dict[str, Any]]] = []
    start, left = 0, len(rows)
    while left:
        size = min(MAX_PIECE, 1 << (left.bit_length() - 1))
        found.append(rows[start : start + size])
        start, left = start + size, left - size
    return found


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


class TelemetryWriter:
    def __init__(
        self,
        engine: AsyncEngine,
        settings: WriterSettings | None = None,
        *,
        tasks: Supervisor | None = None,
    ) -> None:
        settings = settings or WriterSettings()
        self._tasks = tasks or Supervisor()
        self._engine = engine
        self._max_queue = settings.max_queue
        self._batch_size = settings.batch_size
        self._flush_interval = settings.flush_interval
        self._enabled = settings.enabled
        self._retry_attempts = settings.retry_attempts
        self._retry_delay = settings.retry_delay
        self._retry_max_delay = settings.retry_max_delay
        self._stop_timeout = settings.stop_timeout
        self._limits = _string_limits()
        self._upsert = upsert_statement(engine.dialect)
        self._hourly_upsert, self._latency_upsert = rollup_statements(engine.dialect)
        self._level_upserts = level_statements(engine.dialect)
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
        self.failed_batches = 0
        self.rejected = 0  # rows set aside for a value the database refused (in dropped too)

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
        if len(self._queue) >= self._max_queue:
            self.dropped += 1
            return
        self._queue.append(record)
        self._accepted += 1
        depth = len(self._queue)
        if depth == 1 or depth >= self._batch_size:
            self._wake.set()

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
            await asyncio.wait_for(asyncio.shield(self._task), self._stop_timeout)
        except TimeoutError:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
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
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self._flush_interval)
            await self._write(self._take_batch())

    def _take_batch(self) -> list[TelemetryRecord]:
        count = min(self._batch_size, len(self._queue))
        return [self._queue.popleft() for _ in range(count)]

    async def _write(self, batch: list[TelemetryRecord]) -> None:
        """Write the batch; a value the database refuses costs only its own row: the part
        that failed is split in halves until the row is found and set aside."""
        if not batch:
            return
        self._in_flight = len(batch)
        written = 0
        parts = [batch]
        while parts:
            part = parts.pop()
            failure = await self._insert_retrying(part)
            if failure is None:
                written += len(part)
            elif not is_rejected_value(failure):
                lost = len(part) + sum(map(len, parts))
                log.error(
                    "telemetry: dropped %d rows after %d attempts (%s)",
                    lost,
                    self._retry_attempts,
                    describe_error(failure),
                )
                break
            elif len(part) > 1:
                half = len(part) // 2
                parts += [part[half:], part[:half]]  # the first half is written first
            else:
                self._set_aside(part[0], failure)
        await self._settle(written, written=True)
        await self._settle(len(batch) - written, written=False)

    async def _insert_retrying(self, part: list[TelemetryRecord]) -> Exception | None:
        """None once written; the error of a refused value at once; else the last error
        after ``retry_attempts`` (an outage, or a statement that fails every row)."""
        delay = self._retry_delay
        for attempt in range(1, self._retry_attempts + 1):
            try:
                await self._insert(part)
            except Exception as exc:  # the boundary: no database failure reaches a call
                self.failed_batches += 1
                if is_rejected_value(exc) or attempt == self._retry_attempts:
                    return exc
                log.warning("telemetry: batch write failed, retrying (%s)", describe_error(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, self._retry_max_delay)
            else:
                return None
        return None  # retry_attempts < 1: nothing tried, nothing to report

    def _set_aside(self, record: TelemetryRecord, error: Exception) -> None:
        """One row the database refuses: logged by its request id (never its content)."""
        self.rejected += 1
        log.error(
            "telemetry: row of call %s set aside, the database refused a value (%s)",
            record.request_id[:128],
            describe_error(error),
        )

    async def _insert(self, batch: list[TelemetryRecord]) -> None:
        rows = [to_row(record, self._limits) for record in batch]
        increments = usage_increments(batch)
        hourly, latency = hourly_increments(batch)
        levels = level_increments(hourly, latency)
        upserts = self._level_upserts
        statements = (
            (telemetry.insert(), rows),
            (self._upsert, increments),
            (self._hourly_upsert, hourly),
            (upserts.daily, levels.daily),
            (self._latency_upsert, latency),
            (upserts.hourly_histogram, levels.hourly_histogram),
            (upserts.daily_histogram, levels.daily_histogram),
        )
        async with self._engine.begin() as connection:
            for statement, parameters in statements:  # in order: the upserts' keys sorted
                for piece in pieces(parameters):
                    await connection.execute(statement, piece)

    async def _settle(self, count: int, *, written: bool) -> None:
        self._in_flight = 0
        if written:
            self.written += count
        else:
            self.dropped += count
        async with self._settled_changed:
            self._settled += count
            self._settled_changed.notify_all()
