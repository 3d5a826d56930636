"""Writing one batch of telemetry records: the database half of the telemetry writer.

Both writers use it: the one on the serving loop (``telemetry.writer: inline``,
:mod:`gateway.telemetry.writer`) and the writer process (``telemetry.writer: process``,
:mod:`gateway.telemetry.writer_child`). A batch goes in one transaction: its rows
(one multi-row insert per piece), their ``usage_daily`` increments and their hourly and
daily rollups, and its key in ``telemetry_batches``. A key found there means the batch
was committed before (sent again after the writer process restarted, or a commit whose
answer was lost): the batch is counted as written and nothing is written again.

A database outage never fails a call: a failed transaction is retried with exponential
backoff, and only after ``retry_attempts`` is the batch dropped and counted. A batch the
database refuses for a value of one row (``db.failures.is_rejected_value``) is not
retried: it is split in halves, again and again, each half under its own key (the batch's
and ``/offset+length``), so every other row is written once and only that row is set
aside, logged by its request id and counted as dropped.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import describe_error
from gateway.db.failures import is_rejected_value
from gateway.db.tables import telemetry, telemetry_batches
from gateway.domain.clock import utc_now
from gateway.domain.errors import GatewayException
from gateway.telemetry.records import TelemetryRecord, to_row
from gateway.telemetry.rollup import hourly_increments, rollup_statements
from gateway.telemetry.rollup_levels import level_increments, level_statements
from gateway.telemetry.usage_daily import upsert_statement, usage_increments

log = logging.getLogger(__name__)

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


def _string_limits() -> dict[str, int]:
    return {
        column.name: column.type.length
        for column in telemetry.columns
        if isinstance(column.type, String) and column.type.length
    }


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    attempts: int = 45  # with the capped backoff: about five minutes of outage
    delay: float = 0.25  # seconds before the first retry of a failed batch, doubling
    max_delay: float = 8.0


@dataclass(frozen=True, slots=True)
class Entry:
    """One record and its ``routing_detail`` JSON: computed here from the record's trail
    (``detail`` left as ``None`` and ``own_detail`` False), or already (the writer process
    receives records whose trail the serving process turned into JSON)."""

    record: TelemetryRecord
    detail: str | None = None
    own_detail: bool = False


@dataclass(slots=True)
class Outcome:
    written: int = 0
    dropped: int = 0
    rejected: int = 0  # of dropped: rows set aside for a value the database refused


class _AlreadyWritten(GatewayException):
    """The batch's key is in telemetry_batches: committed before."""


class BatchWriter:
    """Writes batches under their keys; counts failed attempts in ``failed_batches``."""

    def __init__(
        self,
        engine: AsyncEngine,
        policy: RetryPolicy | None = None,
        *,
        on_failure: Callable[[], None] | None = None,
    ) -> None:
        self._engine = engine
        self._policy = policy or RetryPolicy()
        self._on_failure = on_failure  # each failed attempt, as it happens
        self._limits = _string_limits()
        self._upsert = upsert_statement(engine.dialect)
        self._hourly_upsert, self._latency_upsert = rollup_statements(engine.dialect)
        self._level_upserts = level_statements(engine.dialect)
        self.failed_batches = 0  # failed attempts (each retry of an outage counts)
        self.duplicates = 0  # batch parts found written before, written nothing

    async def write(self, key: str, entries: list[Entry]) -> Outcome:
        """Write the batch; a value the database refuses costs only its own row: the part
        that failed is split in halves until the row is found and set aside."""
        outcome = Outcome()
        parts = [(0, entries)]
        while parts:
            offset, part = parts.pop()
            part_key = key if len(part) == len(entries) else f"{key}/{offset}+{len(part)}"
            failure = await self._insert_retrying(part_key, part)
            if failure is None:
                outcome.written += len(part)
            elif not is_rejected_value(failure):
                lost = len(part) + sum(len(rest) for _, rest in parts)
                log.error(
                    "telemetry: dropped %d rows after %d attempts (%s)",
                    lost,
                    self._policy.attempts,
                    describe_error(failure),
                )
                outcome.dropped += lost
                break
            elif len(part) > 1:
                half = len(part) // 2
                # The first half is written first.
                parts += [(offset + half, part[half:]), (offset, part[:half])]
            else:
                self._set_aside(part[0].record, failure)
                outcome.dropped += 1
                outcome.rejected += 1
        return outcome

    async def _insert_retrying(self, key: str, part: list[Entry]) -> Exception | None:
        """None once written (or found written before); the error of a refused value at
        once; else the last error after ``attempts`` (an outage, or a statement that fails
        every row)."""
        policy = self._policy
        delay = policy.delay
        for attempt in range(1, policy.attempts + 1):
            try:
                await self._insert(key, part)
            except _AlreadyWritten:
                self.duplicates += 1
                return None
            except Exception as exc:  # the boundary: no database failure reaches a call
                self.failed_batches += 1
                if self._on_failure is not None:
                    self._on_failure()
                if is_rejected_value(exc) or attempt == policy.attempts:
                    return exc
                log.warning("telemetry: batch write failed, retrying (%s)", describe_error(exc))
                await asyncio.sleep(delay)
                delay = min(delay * 2, policy.max_delay)
            else:
                return None
        return None  # attempts < 1: nothing tried, nothing to report

    def _set_aside(self, record: TelemetryRecord, error: Exception) -> None:
        """One row the database refuses: logged by its request id (never its content)."""
        log.error(
            "telemetry: row of call %s set aside, the database refused a value (%s)",
            record.request_id[:128],
            describe_error(error),
        )

    async def _insert(self, key: str, part: list[Entry]) -> None:
        batch = [entry.record for entry in part]
        rows = [self._row(entry) for entry in part]
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
        keys = telemetry_batches.c.batch_key
        async with self._engine.begin() as connection:
            found = await connection.execute(select(keys).where(keys == key))
            if found.first() is not None:
                raise _AlreadyWritten
            try:
                await connection.execute(
                    telemetry_batches.insert(), {"batch_key": key, "written_at": utc_now()}
                )
            except IntegrityError as exc:  # another writer committed the key meanwhile
                raise _AlreadyWritten from exc
            for statement, parameters in statements:  # in order: the upserts' keys sorted
                for piece in pieces(parameters):
                    await connection.execute(statement, piece)

    def _row(self, entry: Entry) -> dict[str, Any]:
        row = to_row(entry.record, self._limits)
        if entry.own_detail:
            row["routing_detail"] = entry.detail
        return row
