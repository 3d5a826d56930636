"""The writer process's supervision: a writer process that holds batches and answers
nothing is killed and replaced (its rows all arrive), a database outage is not taken for a
hang, and a batch that ends every writer process it is sent to is given up on after
POISON_ENDINGS of them, the rows after it written."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db.engine import create_engine
from gateway.db.tables import telemetry
from gateway.telemetry import process_writer
from gateway.telemetry.process_writer import ProcessWriter
from gateway.telemetry.records import TelemetryRecord
from gateway.telemetry.supervision import POISON_ENDINGS, Suspect
from gateway.telemetry.wire import HEADER, MAX_FRAME
from gateway.telemetry.writer import WriterSettings
from tests.support.tcp_proxy import TcpProxy
from tests.unit.db.scratch import scratch_database
from tests.unit.telemetry.factory import make_record

FAST = {"retry_delay": 0.05, "retry_max_delay": 0.2, "stop_timeout": 5.0}


@pytest.fixture
def sqlite_url(tmp_path: Path) -> Iterator[str]:
    with scratch_database("sqlite", tmp_path, migrated=True) as url:
        yield url


async def _ids(url: str) -> list[str]:
    engine: AsyncEngine = create_engine(url)
    try:
        async with engine.connect() as connection:
            found = await connection.execute(select(telemetry.c.correlation_id))
            return sorted(str(row[0]) for row in found)
    finally:
        await engine.dispose()


async def _until(predicate: object, what: str, within: float = 60.0) -> None:
    assert callable(predicate)
    for _ in range(int(within / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError(what)


def test_only_endings_on_its_own_in_a_row_with_one_batch_make_it_the_one_to_drop() -> None:
    suspect = Suspect()
    assert [suspect.ended("k:1", True) for _ in range(POISON_ENDINGS - 1)] == [False] * 2
    assert suspect.ended("k:1", True)  # the third in a row
    assert not suspect.ended("k:1", True)  # counted afresh after a drop
    assert not suspect.ended("k:2", True) and not suspect.ended("k:1", True)  # not in a row
    suspect.ended("k:3", True)
    suspect.ended("k:3", True)
    assert not suspect.ended("k:3", False)  # killed as hung, or never set up: no evidence
    assert not suspect.ended("k:3", True)


async def test_a_stopped_writer_process_is_killed_and_its_rows_all_arrive(
    sqlite_url: str,
) -> None:
    restarted: list[str] = []
    settings = WriterSettings(batch_size=5, hang_timeout=1.5, **FAST)
    writer = ProcessWriter(sqlite_url, settings, on_restart=restarted.append)
    await writer.start()
    writer.submit(make_record(request_id="r-before"))
    await writer.flush()
    pid = writer.pid
    assert pid is not None and writer.written == 1
    os.kill(pid, signal.SIGSTOP)  # alive, holding what it is sent, answering nothing
    try:
        for index in range(12):
            writer.submit(make_record(request_id=f"r{index:02d}"))
        await asyncio.wait_for(writer.flush(), 60)  # main: held until the queue's bound
    finally:
        if writer.pid == pid:
            os.kill(pid, signal.SIGCONT)
    assert (writer.hung, writer.written, writer.dropped, writer.queue_depth) == (1, 13, 0, 0)
    assert writer.pid not in (None, pid) and restarted == ["telemetry-writer-process"]
    await writer.stop()
    assert await _ids(sqlite_url) == ["r-before", *(f"r{index:02d}" for index in range(12))]


@pytest.mark.skipif(
    not os.environ.get("GATEWAY_TEST_POSTGRES_URL"), reason="GATEWAY_TEST_POSTGRES_URL is not set"
)
async def test_a_database_outage_longer_than_the_hang_timeout_is_not_a_hang(
    tmp_path: Path,
) -> None:
    with scratch_database("postgresql", tmp_path, migrated=True) as direct:
        proxy, through = TcpProxy.for_url(direct)
        try:
            settings = WriterSettings(batch_size=5, hang_timeout=1.5, **FAST)
            writer = ProcessWriter(through, settings)
            await writer.start()
            writer.submit(make_record(request_id="r-before"))
            await writer.flush()
            pid = writer.pid
            proxy.down()  # every connection cut, new ones refused
            try:
                for index in range(8):
                    writer.submit(make_record(request_id=f"r{index}"))
                # Over twice the hang timeout of outage: the writer process reports each
                # failed attempt, so it is waited on, not killed.
                await _until(lambda: writer.failed_batches >= 3, "no failed attempts seen")
                await asyncio.sleep(3.5)
                assert (writer.hung, writer.restarts, writer.pid) == (0, 0, pid)
            finally:
                proxy.up()
            await asyncio.wait_for(writer.flush(), 60)
            assert (writer.written, writer.dropped, writer.hung) == (9, 0, 0)
            await writer.stop()
            assert len(await _ids(direct)) == 9
        finally:
            proxy.close()


async def test_a_batch_that_ends_every_writer_process_is_dropped_after_three(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    encode = process_writer._encode

    def poisoned(key: str, batch: list[TelemetryRecord]) -> bytes:
        if batch[0].request_id == "poison":  # a frame no writer process can read past
            return HEADER.pack(MAX_FRAME + 1)
        return encode(key, batch)

    monkeypatch.setattr(process_writer, "_encode", poisoned)
    writer = ProcessWriter(sqlite_url, WriterSettings(batch_size=1, **FAST))
    await writer.start()
    writer.submit(make_record(request_id="before"))
    await writer.flush()
    writer.submit(make_record(request_id="poison"))
    writer.submit(make_record(request_id="after"))
    await asyncio.wait_for(writer.flush(), 120)  # main: sent to a new process forever
    assert (writer.written, writer.dropped, writer.poison) == (2, 1, 1)
    assert writer.restarts == POISON_ENDINGS and writer.hung == 0
    await writer.stop()
    assert await _ids(sqlite_url) == ["after", "before"]
    assert "ended holding the same batch first; its 1 rows are dropped" in caplog.text
