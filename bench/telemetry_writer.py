"""What the telemetry writer costs the event loop per row, apart from serving.

Hands batches of telemetry records (a fixed-mode call each, as the overhead benchmark's
calls are) to the writer, waits for each batch to be written into a fresh database, and
prints the CPU time per row of the event loop's thread and of the whole process. Inline
(``telemetry.writer: inline``): building the rows and the rollup increments, SQLAlchemy
binding the parameters, and the driver's thread. Process (the default writer): the
serving loop only encodes the batches; the writer process's CPU is printed beside.

    python bench/telemetry_writer.py [--url sqlite+aiosqlite:///...] [--batches 12]
                                     [--batch-size 500] [--writer both|inline|process]

The default URL is a SQLite file in a temporary directory. A PostgreSQL or MariaDB URL
must name a scratch database: the benchmark upgrades its schema and adds rows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from gateway.db.engine import create_engine  # noqa: E402 - run from a checkout
from gateway.db.migrate import upgrade_engine  # noqa: E402
from gateway.domain.usage import UsageSource  # noqa: E402
from gateway.routing.detail import AttemptNote, CallTrail  # noqa: E402
from gateway.telemetry.process_writer import ProcessWriter  # noqa: E402
from gateway.telemetry.records import TelemetryRecord  # noqa: E402
from gateway.telemetry.writer import TelemetryWriter, WriterSettings  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def child_cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


def record(index: int) -> TelemetryRecord:
    """A served fixed-mode chat call with reported usage, like the overhead benchmark's."""
    trail = CallTrail(fixed_model="a", fixed_provider="up")
    trail.attempts.append(AttemptNote("fixed", "up", "a", "served", 200))
    return TelemetryRecord(
        created_at=datetime.now(UTC),
        request_id=os.urandom(16).hex(),
        operation="chat",
        configuration="fixed",
        success=True,
        http_status=200,
        latency_ms=1.0 + index % 7,
        api_key_id="bench",
        provider="up",
        adapter_type="openai",
        model="a",
        served_configuration="fixed",
        served_provider="up",
        served_model="a",
        response_model="bench-model",
        actual_input_tokens=12,
        actual_output_tokens=3,
        actual_cost=Decimal("0.0000036"),
        usage_source=UsageSource.PROVIDER,
        routing_policy_mode="balanced",
        trail=trail,
    )


async def measure(url: str, batches: int, size: int, mode: str) -> None:
    engine = create_engine(url)
    try:
        await upgrade_engine(engine)
        settings = WriterSettings(batch_size=size, max_queue=size * 4)
        writer: TelemetryWriter | ProcessWriter = (
            ProcessWriter(url, settings) if mode == "process" else TelemetryWriter(engine, settings)
        )
        await writer.start()
        prepared = [[record(i) for i in range(size)] for _ in range(batches + 2)]

        async def write(batch: list[TelemetryRecord]) -> None:
            for one in batch:
                writer.submit(one)
            await writer.flush()  # the writer's task inserts the batch now

        for batch in prepared[:2]:  # warm up: statements compiled and prepared
            await write(batch)
        pid = writer.pid if isinstance(writer, ProcessWriter) else None
        thread, process = time.thread_time(), time.process_time()
        child = child_cpu_seconds(pid)
        for batch in prepared[2:]:
            await write(batch)
        child_us = 1e6 * (child_cpu_seconds(pid) - child) / (batches * size)
        await writer.stop()
        if writer.written != len(prepared) * size:
            raise RuntimeError(f"wrote {writer.written} rows of {len(prepared) * size}")
        rows = batches * size
        loop_us = 1e6 * (time.thread_time() - thread) / rows
        process_us = 1e6 * (time.process_time() - process) / rows
    finally:
        await engine.dispose()
    print(f"conditions: {batches} batches of {size} rows, {engine.dialect.name}, writer {mode}")
    print(f"  event loop thread: {loop_us:6.1f} µs per row")
    print(f"  whole process:     {process_us:6.1f} µs per row")
    if mode == "process":
        print(f"  writer process:    {child_us:6.1f} µs per row")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", help="the database (default: a SQLite file in a temp dir)")
    parser.add_argument("--batches", type=int, default=12)
    parser.add_argument("--batch-size", type=int, default=500)
    parser.add_argument("--writer", choices=["both", "inline", "process"], default="both")
    args = parser.parse_args()
    modes = ["inline", "process"] if args.writer == "both" else [args.writer]
    for mode in modes:
        url = args.url or f"sqlite+aiosqlite:///{tempfile.mkdtemp(prefix='gateway-writer-')}/w.db"
        asyncio.run(measure(url, args.batches, args.batch_size, mode))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
