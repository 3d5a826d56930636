"""The targets bench/stream_load.py drives: the upstream directly, the gateway (SQLite,
PostgreSQL), the floor, and LiteLLM's proxy and Portkey's gateway where installed.

Each ``run_*`` starts its target on the paced upstream, runs the load against it
(stream_measure.run_load) and stops it; a target that cannot run returns the line that
says why instead of figures.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import shutil
import sqlite3
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from bench_config import KEY, bench_config
from processes import free_port, start, stop, wait_port
from stream_measure import Figures, Target, run_load

ROOT = Path(__file__).resolve().parents[1]
SERVE = [sys.executable, "-m", "gateway.cli", "serve", "--config"]
AUTH = [f"authorization:Bearer {KEY}"]
# The peers are given keys of their own: LiteLLM's proxy will not start without one.
LITELLM_KEY = "sk-litellm-bench-0123456789"
UPSTREAM_KEY = "sk-upstream"


def run_target(
    name: str,
    args: argparse.Namespace,
    upstream_url: str,
    upstream_pid: int,
    scratch: Path,
) -> Figures | str:
    """One target's figures, or the line saying why it was skipped."""
    runner = RUNNERS.get(name)
    if runner is None:
        return f"{name}: unknown target (known: {', '.join(RUNNERS)})"
    return runner(args, upstream_url, upstream_pid, scratch)


def run_direct(args: argparse.Namespace, upstream_url: str, upstream_pid: int, _: Path) -> Figures:
    port = int(upstream_url.rsplit(":", 1)[1])
    return run_load(args, Target("direct", port, upstream_pid), upstream_pid)


def run_sqlite(
    args: argparse.Namespace, upstream_url: str, upstream_pid: int, scratch: Path
) -> Figures:
    db = scratch / "telemetry.db"
    return _run_gateway(
        args,
        "gateway, SQLite",
        f"sqlite+aiosqlite:///{db}",
        sqlite_rows(db),
        upstream_url,
        upstream_pid,
        scratch,
    )


def run_postgres(
    args: argparse.Namespace, upstream_url: str, upstream_pid: int, scratch: Path
) -> Figures | str:
    if not args.postgres:
        return "gateway, PostgreSQL: skipped (no --postgres URL, GATEWAY_TEST_POSTGRES_URL unset)"
    from sqlalchemy.engine import make_url

    database = f"gwbench_{uuid.uuid4().hex[:10]}"
    asyncio.run(_server_ddl(args.postgres, f"CREATE DATABASE {database}"))
    url = make_url(args.postgres).set(database=database).render_as_string(hide_password=False)
    try:
        return _run_gateway(
            args,
            "gateway, PostgreSQL",
            url,
            postgres_rows(url),
            upstream_url,
            upstream_pid,
            scratch,
        )
    finally:
        asyncio.run(_server_ddl(args.postgres, f"DROP DATABASE IF EXISTS {database} WITH (FORCE)"))


def _run_gateway(
    args: argparse.Namespace,
    name: str,
    database_url: str,
    rows: Callable[[], int],
    upstream_url: str,
    upstream_pid: int,
    scratch: Path,
) -> Figures:
    port = free_port()
    config = gateway_config(args, database_url, upstream_url, port, scratch)
    process = start([*SERVE, str(config)], {**os.environ})
    try:
        wait_port(port, 120)
        time.sleep(1 + args.workers)  # every worker has started
        target = Target(name, port, process.pid, headers=AUTH, rows=rows)
        return run_load(args, target, upstream_pid)
    finally:
        stop(process)


def run_floor(args: argparse.Namespace, upstream_url: str, upstream_pid: int, _: Path) -> Figures:
    port = free_port()
    process = start([sys.executable, str(ROOT / "bench" / "floor.py"), str(port), upstream_url])
    try:
        wait_port(port)
        return run_load(args, Target("floor", port, process.pid), upstream_pid)
    finally:
        stop(process)


def run_litellm(
    args: argparse.Namespace, upstream_url: str, upstream_pid: int, scratch: Path
) -> Figures | str:
    """LiteLLM's proxy (``--litellm PATH``, else ``litellm`` on PATH) with one model on the
    upstream, its master key set, no database (so no spend logs) and its log at ERROR."""
    command = args.litellm or shutil.which("litellm")
    if command is None or not Path(command).exists():
        return "LiteLLM proxy: not installed (pip install 'litellm[proxy]'; --litellm PATH)"
    config = scratch / "litellm.yaml"
    config.write_text(
        "model_list:\n  - model_name: fixed\n    litellm_params:\n"
        f"      model: openai/bench-model\n      api_base: {upstream_url}/v1\n"
        f"      api_key: {UPSTREAM_KEY}\n"
    )
    port = free_port()
    env = {**os.environ, "LITELLM_MASTER_KEY": LITELLM_KEY, "LITELLM_LOG": "ERROR"}
    env.pop("DATABASE_URL", None)
    litellm = [command, "--config", str(config), "--port", str(port)]
    process = start([*litellm, "--num_workers", str(args.workers)], env)
    try:
        wait_port(port, 180)
        time.sleep(2 + args.workers)
        headers = [f"authorization:Bearer {LITELLM_KEY}"]
        target = Target("LiteLLM proxy", port, process.pid, headers=headers)
        target.health = "/health/liveliness"
        return run_load(args, target, upstream_pid)
    finally:
        stop(process)


def run_portkey(
    args: argparse.Namespace, upstream_url: str, upstream_pid: int, _: Path
) -> Figures | str:
    """Portkey's gateway (``--portkey PATH`` to its build/start-server.js, run by ``node``),
    routed to the upstream by its headers: provider openai, the upstream as custom host."""
    node = shutil.which("node")
    if not args.portkey or not Path(args.portkey).exists() or node is None:
        return (
            "Portkey gateway: not installed (npm install @portkey-ai/gateway; "
            "--portkey PATH/node_modules/@portkey-ai/gateway/build/start-server.js)"
        )
    port = free_port()
    process = start([node, args.portkey, f"--port={port}", "--headless"])
    try:
        wait_port(port, 60)
        time.sleep(1)
        headers = [
            "x-portkey-provider:openai",
            f"x-portkey-custom-host:{upstream_url}/v1",
            f"authorization:Bearer {UPSTREAM_KEY}",
        ]
        target = Target("Portkey gateway", port, process.pid, headers=headers, health="/")
        return run_load(args, target, upstream_pid)
    finally:
        stop(process)


RUNNERS: dict[str, Callable[[argparse.Namespace, str, int, Path], Figures | str]] = {
    "direct": run_direct,
    "sqlite": run_sqlite,
    "postgres": run_postgres,
    "floor": run_floor,
    "litellm": run_litellm,
    "portkey": run_portkey,
}


def sqlite_rows(path: Path) -> Callable[[], int]:
    def count() -> int:
        with sqlite3.connect(path, timeout=30) as connection:
            return int(connection.execute("SELECT count(*) FROM telemetry").fetchone()[0])

    return count


def postgres_rows(url: str) -> Callable[[], int]:
    from sqlalchemy import create_engine, text

    sync = url.replace("+asyncpg", "+psycopg") if importlib.util.find_spec("psycopg") else None

    def count() -> int:
        if sync is not None:
            engine = create_engine(sync)
            with engine.connect() as connection:
                value = int(connection.execute(text("SELECT count(*) FROM telemetry")).scalar_one())
            engine.dispose()
            return value
        return asyncio.run(_async_count(url))

    return count


async def _async_count(url: str) -> int:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(url)
    try:
        async with engine.connect() as connection:
            answer = await connection.execute(text("SELECT count(*) FROM telemetry"))
            return int(answer.scalar_one())
    finally:
        await engine.dispose()


async def _server_ddl(server_url: str, statement: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.ext.asyncio import create_async_engine

    engine = create_async_engine(server_url, isolation_level="AUTOCOMMIT")
    try:
        async with engine.connect() as connection:
            await connection.execute(text(statement))
    finally:
        await engine.dispose()


def gateway_config(
    args: argparse.Namespace, database_url: str, upstream: str, port: int, scratch: Path
) -> Path:
    text = bench_config(str(scratch / "unused.db"), upstream, port, workers=args.workers)
    text = text.replace(
        f'database: {{url: "sqlite+aiosqlite:///{scratch / "unused.db"}"}}',
        f'database: {{url: "{database_url}"}}',
    )
    connections = max(2048, args.streams + 64)
    text = text.replace("server: {", f"server: {{maxConnections: {connections}, ", 1)
    path = scratch / f"gateway-{port}.yaml"
    path.write_text(text)
    return path
