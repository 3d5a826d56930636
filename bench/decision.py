"""Benchmark: decide() with 5, 50 and 500 candidates, and the call-history read on 1M rows.

Targets (PERFORMANCE.md): decide() with 50 candidates, warm caches, <= 50 us; the
call-history read over 1M telemetry rows <= 250 ms on SQLite and PostgreSQL.

    python bench/decision.py [--runs 31] [--calls 2000] [--rows 1000000] [--skip-history]

decide() runs in balanced mode with routing.callHistory on, preferLowestCost (so the
measured call-cost signal is collected too), health for every provider and a call-history
entry (>= the minimum calls, a latency and a cost) for every candidate: every signal is
computed. The snapshot is built once (the signal caches are warm: no I/O).

- "memoised": the proxy's resolver keeps the decisions taken on unchanged snapshot inputs
  (gateway/routing/memo.py), so a repeated call is a memo lookup; this is what nearly every
  proxied call pays between two cache refreshes.
- "uncached": decide() itself, which screens, collects the signals and ranks afresh; this is
  the first call after a refresh.

The history read reuses bench/history_read.py's seeding (``fill``) and timing (``measure``):
the same 1M-row layouts, keys and failure mix, in a temporary SQLite file and, when
GATEWAY_TEST_POSTGRES_URL is set, in a scratch PostgreSQL database created and dropped here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path

from sqlalchemy.engine import make_url

from gateway.db import migrate
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


async def bench_history(name: str, url: str, rows: int, runs: int) -> None:
    for layout, span in history_read.LAYOUTS.items():
        # A fresh schema per layout, as history_read does: no leftover rows from the last one.
        migrate.upgrade(url)
        try:
            fill_seconds = await history_read.fill(url, rows, span)
            cold, warm, calls, _ = await history_read.measure(url, runs)
        finally:
            migrate.downgrade(url)
        print(
            f"  {name:10} {layout:17} rows={rows:,} in-population={calls:,}  "
            f"cold={cold:7.1f} ms  warm median={statistics.median(warm):7.1f} ms "
            f"(min {min(warm):.1f}, max {max(warm):.1f}; {runs} runs; fill {fill_seconds:.1f} s)"
        )


async def bench_postgres(server_url: str, rows: int, runs: int) -> None:
    database = f"gwbench_{uuid.uuid4().hex[:10]}"
    await history_read.server_ddl(server_url, f"CREATE DATABASE {database}")
    try:
        url = make_url(server_url).set(database=database).render_as_string(hide_password=False)
        await bench_history("postgresql", url, rows, runs)
    finally:
        drop = f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"
        await history_read.server_ddl(server_url, drop)


async def history_reads(rows: int, runs: int) -> None:
    print(
        f"call-history read (gateway.signals.history.read_call_history), "
        f"{history_read.DAYS}-day window, seeded by bench/history_read.py"
    )
    with tempfile.TemporaryDirectory() as directory:
        url = f"sqlite+aiosqlite:///{Path(directory) / 'bench.db'}"
        await bench_history("sqlite", url, rows, runs)
    server_url = os.environ.get("GATEWAY_TEST_POSTGRES_URL")
    if server_url:
        await bench_postgres(server_url, rows, runs)
    else:
        print("  postgresql: skipped (GATEWAY_TEST_POSTGRES_URL not set)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=31, help="timed batches per decide() figure")
    parser.add_argument("--calls", type=int, default=2000, help="calls per memoised batch")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--history-runs", type=int, default=5, help="warm reads after the cold")
    parser.add_argument("--skip-history", action="store_true")
    args = parser.parse_args()
    print(
        f"python {platform.python_version()} ({platform.python_implementation()}), "
        f"{platform.machine()}, {os.cpu_count()} CPUs; targets: decide() 50 candidates "
        f"<= 50 us, history read 1M rows <= 250 ms"
    )
    bench_decide(args.runs, args.calls)
    if not args.skip_history:
        asyncio.run(history_reads(args.rows, args.history_runs))


if __name__ == "__main__":
    main()
