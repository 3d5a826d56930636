"""Benchmark: decide() with 5, 50 and 500 candidates, and the signal reads on 1M rows.

Targets: decide() with 50 candidates, warm caches, <= 50 us; the call-history and
health reads over 1M telemetry rows <= 50 ms on SQLite, PostgreSQL and MariaDB.

    python bench/decision.py [--runs 31] [--calls 2000] [--rows 1000000] [--skip-history]
        [--skip-decide] [--only sqlite|postgresql|mariadb]

decide() runs in balanced mode with routing.callHistory on, preferLowestCost (so the
measured call-cost signal is collected too), health for every provider and a call-history
entry (>= the minimum calls, a latency and a cost) for every candidate: every signal is
computed. The snapshot is built once (the signal caches are warm: no I/O).

- "memoised": the proxy's resolver keeps the decisions taken on unchanged snapshot inputs
  (gateway/routing/memo.py), so a repeated call is a memo lookup; this is what nearly every
  proxied call pays between two cache refreshes.
- "uncached": decide() itself, which screens, collects the signals and ranks afresh; this is
  the first call after a refresh.

The signal reads reuse bench/history_read.py's seeding (``fill``: the rows, then the
rollup's hours and days backfilled from them, as migrations 0004 and 0007 do): the same
1M-row layouts, keys and
failure mix, in a temporary SQLite file and, when GATEWAY_TEST_POSTGRES_URL /
GATEWAY_TEST_MARIADB_URL are set, in scratch databases created and dropped here. Each read is
timed on a fresh engine (cold: the first run) and then warm; the rows-only reads (the read
before the rollup) are printed beside the rollup-based ones, and the bench checks that both
give the same calls and latencies.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from decimal import Decimal
from pathlib import Path

from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from gateway.db import migrate
from gateway.db.engine import create_engine
from gateway.domain.model import (
    AdapterType,
    Capability,
    Configuration,
    Criteria,
    Model,
    Operation,
    PolicyMode,
    Price,
    Provider,
    RoutingSettings,
)
from gateway.domain.signals import HistoryFigures, HistoryKey
from gateway.routing import ranker
from gateway.routing.memo import DecisionMemo
from gateway.routing.operation import required_for
from gateway.routing.snapshot import Snapshot
from gateway.signals.health import read_health
from gateway.signals.history import read_call_history

# history_read puts the repo root first on sys.path; its alembic/ folder has no __init__.py,
# so the alembic library still wins the import.
sys.path.insert(0, str(Path(__file__).resolve().parent))
import history_read  # the sibling benchmark, imported for its seeding code

SIZES = (5, 50, 500)
PROVIDERS = 10  # models are spread over this many providers (fewer when fewer models)


def build(n: int, seed: int = 7) -> tuple[Configuration, Snapshot]:
    """n active chat models with prices, health, and a history entry each."""
    rng = random.Random(seed)
    provider_count = min(n, PROVIDERS)
    providers = {
        f"p{i}": Provider(id=f"p{i}", adapter=AdapterType.OPENAI, base_url="http://x/v1")
        for i in range(provider_count)
    }
    models: list[Model] = []
    history: dict[HistoryKey, HistoryFigures] = {}
    for i in range(n):
        provider = f"p{i % provider_count}"
        price = Price(Decimal(rng.randint(5, 300)) / 100, Decimal(rng.randint(20, 1200)) / 100)
        models.append(
            Model(
                id=f"m{i}",
                provider=provider,
                name=f"model-{i}",
                capabilities=frozenset({Capability.CHAT, Capability.TOOLS}),
                context_length=128000,
                price=price,
                order=i,
            )
        )
        history[(provider, f"m{i}", Operation.CHAT)] = HistoryFigures(
            calls=rng.randint(5, 500),
            mean_latency_ms=rng.uniform(200, 9000),
            costed_calls=rng.randint(5, 500),
            mean_cost=Decimal(rng.randint(10, 20000)) / 1_000_000,
        )
    snapshot = Snapshot(
        models=tuple(models),
        providers=providers,
        routing=RoutingSettings(policy_mode=PolicyMode.BALANCED, call_history=True),
        health={pid: rng.uniform(0.6, 1.0) for pid in providers},
        quality={},
        history=history,
        open_circuits=frozenset(),
    )
    configuration = Configuration(
        id="bench",
        mode="criteria",
        criteria=Criteria(capabilities=frozenset({Capability.CHAT}), prefer_lowest_cost=True),
    )
    return configuration, snapshot


def per_call_us(body: Callable[[], object], calls: int, runs: int) -> tuple[float, float, float]:
    """(median, min, max) over ``runs`` batches of ``calls`` calls, in microseconds per call."""
    batches = []
    for _ in range(runs):
        started = time.perf_counter()
        for _ in range(calls):
            body()
        batches.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(batches), min(batches), max(batches)


def bench_decide(runs: int, calls: int) -> None:
    operation = Operation.CHAT
    required = required_for(operation)
    memo = DecisionMemo()
    print(
        f"decide(): balanced, callHistory on, preferLowestCost (measured cost basis), "
        f"{min(PROVIDERS, max(SIZES))} providers max; median of {runs} batches"
    )
    for n in SIZES:
        configuration, snapshot = build(n)
        decision = ranker.decide(configuration, operation, required, snapshot)
        assert decision.cost_basis == "measured" and "latency" in decision.signals_used
        assert len(decision.candidates) == n

        def memoised(c: Configuration = configuration, s: Snapshot = snapshot) -> object:
            return memo.decide(c, operation, required, s)

        def uncached(c: Configuration = configuration, s: Snapshot = snapshot) -> object:
            return ranker.decide(c, operation, required, s)

        batch = max(1, calls // n)  # fewer calls per batch for the large rankings
        hit = per_call_us(memoised, calls, runs)
        miss = per_call_us(uncached, batch, runs)
        print(
            f"  {n:3} candidates  memoised: {hit[0]:8.2f} us/call (min {hit[1]:.2f}, "
            f"max {hit[2]:.2f}; {calls} calls/batch)   uncached: {miss[0]:9.1f} us/call "
            f"(min {miss[1]:.1f}, max {miss[2]:.1f}; {batch} calls/batch)"
        )


Read = Callable[[AsyncEngine], Awaitable[object]]

DAYS = history_read.DAYS
NOW = history_read.NOW
READS: dict[str, Read] = {
    "history mean (rollup)": lambda e: read_call_history(e, DAYS, NOW),
    "history p50 (rollup)": lambda e: read_call_history(e, DAYS, NOW, statistic="p50"),
    "history p90 (rollup)": lambda e: read_call_history(e, DAYS, NOW, statistic="p90"),
    "history mean (rows only)": lambda e: read_call_history(e, DAYS, NOW, use_rollup=False),
    "health 900 s window": lambda e: read_health(e, 900, NOW),
    "health 24 h window (rollup)": lambda e: read_health(e, 86400, NOW),
    "health 24 h window (rows only)": lambda e: read_health(e, 86400, NOW, use_rollup=False),
}


async def _timed(read: Read, engine: AsyncEngine) -> tuple[float, object]:
    started = time.perf_counter()
    result = await read(engine)
    return (time.perf_counter() - started) * 1000, result


async def measure_reads(url: str, runs: int) -> dict[str, tuple[float, list[float], object]]:
    """Each read on a new engine: the cold (first) run, then ``runs`` warm ones."""
    out: dict[str, tuple[float, list[float], object]] = {}
    for name, read in READS.items():
        engine = create_engine(url)
        try:
            cold, result = await _timed(read, engine)
            warm = [(await _timed(read, engine))[0] for _ in range(runs)]
        finally:
            await engine.dispose()
        out[name] = (cold, warm, result)
    return out


def _same_history(rolled: object, rows: object) -> bool:
    """Rollup and rows agree: the same keys and calls, latencies within float noise."""
    assert isinstance(rolled, dict) and isinstance(rows, dict)
    if rolled.keys() != rows.keys():
        return False
    return all(
        rolled[k].calls == rows[k].calls
        and math.isclose(rolled[k].mean_latency_ms, rows[k].mean_latency_ms, rel_tol=1e-9)
        for k in rows
    )


async def bench_history(name: str, url: str, rows: int, runs: int) -> None:
    for layout, span in history_read.LAYOUTS.items():
        # A fresh schema per layout, as history_read does: no leftover rows from the last one.
        migrate.upgrade(url)
        try:
            fill_seconds = await history_read.fill(url, rows, span)
            timings = await measure_reads(url, runs)
        finally:
            migrate.downgrade(url)
        history = timings["history mean (rollup)"][2]
        calls = sum(f.calls for f in history.values()) if isinstance(history, dict) else 0
        same = _same_history(history, timings["history mean (rows only)"][2])
        print(
            f"  {name:10} {layout:17} rows={rows:,} in-population={calls:,} "
            f"(insert + rollup backfill {fill_seconds:.1f} s; rollup equals rows: {same})"
        )
        for read_name, (cold, warm, _) in timings.items():
            print(
                f"    {read_name:31} cold={cold:7.1f} ms  warm median="
                f"{statistics.median(warm):7.1f} ms (min {min(warm):.1f}, max {max(warm):.1f}; "
                f"{runs} runs)"
            )


async def bench_server(name: str, server_url: str, rows: int, runs: int) -> None:
    database = f"gwbench_{uuid.uuid4().hex[:10]}"
    await history_read.server_ddl(server_url, f"CREATE DATABASE {database}")
    try:
        url = make_url(server_url).set(database=database).render_as_string(hide_password=False)
        await bench_history(name, url, rows, runs)
    finally:
        force = " WITH (FORCE)" if name == "postgresql" else ""
        await history_read.server_ddl(server_url, f"DROP DATABASE IF EXISTS {database}{force}")


async def history_reads(rows: int, runs: int, only: str | None) -> None:
    print(
        f"signal reads (gateway.signals.history, gateway.signals.health), {DAYS}-day history "
        f"window, now = {NOW:%H:%M:%S} UTC (the rows of the window's first hour, the rollup's "
        f"hours to the next midnight and its days); target <= 50 ms; seeded by "
        f"bench/history_read.py"
    )
    if only in (None, "sqlite"):
        with tempfile.TemporaryDirectory() as directory:
            url = f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}"
            await bench_history("sqlite", url, rows, runs)
    for name, variable in (
        ("postgresql", "GATEWAY_TEST_POSTGRES_URL"),
        ("mariadb", "GATEWAY_TEST_MARIADB_URL"),
    ):
        if only not in (None, name):
            continue
        server_url = os.environ.get(variable)
        if server_url:
            await bench_server(name, server_url, rows, runs)
        else:
            print(f"  {name}: skipped ({variable} not set)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31, help="timed batches per decide() figure")
    parser.add_argument("--calls", type=int, default=2000, help="calls per memoised batch")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--history-runs", type=int, default=5, help="warm reads after the cold")
    parser.add_argument("--skip-history", action="store_true")
    parser.add_argument("--skip-decide", action="store_true")
    parser.add_argument("--only", help="history reads on one backend: sqlite, postgresql, mariadb")
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.machine()}, {os.cpu_count()} CPUs; targets: decide() 50 candidates "
        f"<= 50 us, signal reads on 1M rows <= 50 ms"
    )
    if not args.skip_decide:
        bench_decide(args.runs, args.calls)
    if not args.skip_history:
        asyncio.run(history_reads(args.rows, args.history_runs, args.only))


if __name__ == "__main__":
    main()
