"""Benchmark: the console's pages over 1,000,000 telemetry rows (docs/console.md).

Target (issue 12): each page renders in <= 300 ms with 1M rows.

    python bench/console.py [--rows 1000000] [--runs 5] [--keep PATH] [--url URL]

Generates the rows in a SQLite file (30 days, 6 configurations, 8 keys, 9 models on
3 providers, 6 % failures, 60 % routed calls with a decision detail, 3 % cache
hits), fills ``usage_daily`` and the hourly rollup from them, then serves the real
app on loopback and times each page through HTTP with the admin key: the first
("cold") request and the median and worst of the next runs. Prints one line per
page. With ``--url postgresql+asyncpg://...`` the SQLite file's tables are copied
into that database (emptied first) and the app is served on it. The rows and the copy
are bench/console_data.py's.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from sqlalchemy import create_engine, func, select
from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway.api.app import create_app
from gateway.config.loader import load_config_text
from gateway.db.migrate import upgrade
from gateway.db.tables import telemetry

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling module
from console_data import CONFIGURATIONS, KEYS, MODELS, copy_to_postgres, generate

ADMIN_KEY = "sk-bench-admin-0123456789"


def config_yaml(url: str) -> str:
    providers = "\n".join(
        f"  - {{id: {p}, adapter: openai, baseUrl: 'http://127.0.0.1:9/v1'}}"
        for p in ("openai-main", "anthropic", "local")
    )
    models = "\n".join(
        f"  - {{id: {m}, provider: {p}, capabilities: [chat, tools, streaming, embeddings],"
        f" price: {{input: 0.5, output: 1.5}}}}"
        for m, p in MODELS
    )
    configurations = "\n".join(
        f"  - {{id: {c}, mode: criteria, criteria: {{capabilities: [chat]}}}}"
        for c in CONFIGURATIONS
    )
    keys = "\n".join(
        f"    - {{id: {k}, key: 'sk-bench-{k}-0123456789', "
        "budget: {daily: {requests: 100000}}}"
        for k in KEYS
    )
    return f"""
database: {{url: "{url}"}}
auth:
  adminKey: {ADMIN_KEY}
  keys:
{keys}
routing: {{policyMode: balanced}}
providers:
{providers}
models:
{models}
configurations:
{configurations}
"""


class Server:
    def __init__(self, url: str) -> None:
        import uvicorn

        from gateway.api.serving import uvicorn_options

        config = load_config_text(config_yaml(url), {})
        app = create_app(config)
        self.server = uvicorn.Server(
            uvicorn.Config(
                app,
                host="127.0.0.1",
                port=0,
                log_level="warning",
                access_log=False,
                **uvicorn_options(config.server),
            )
        )
        self.thread = threading.Thread(target=lambda: asyncio.run(self.server.serve()))
        self.thread.start()
        while not self.server.started:
            time.sleep(0.05)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join()


def pages(url: str) -> list[str]:
    engine = create_engine(url)
    with engine.connect() as connection:
        top = connection.execute(select(func.max(telemetry.c.id))).scalar_one()
    engine.dispose()
    middle = top // 2
    return [
        "/admin/?range=today",
        "/admin/?range=7d",
        "/admin/?range=30d",
        "/admin/calls",
        "/admin/calls?configuration=tools",
        "/admin/calls?status=error",
        "/admin/calls?error=budget_exceeded",
        "/admin/calls?model=claude-haiku&mode=balanced",
        "/admin/calls?key=team-3&configuration=embed",
        f"/admin/calls?before={middle}",
        f"/admin/calls/{middle}",
        "/admin/why?configuration=smart-chat&operation=chat",
        "/admin/providers",
        "/admin/budgets",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="reuse or keep the SQLite file at PATH")
    parser.add_argument("--url", help="serve from this PostgreSQL database (emptied first)")
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="console-bench-"))
    path = args.keep or folder / "console.db"
    url = f"sqlite+aiosqlite:///{path}"
    fresh = not path.exists()
    upgrade(url)
    if fresh:
        generate(path, args.rows, datetime.now(UTC))
    if args.url:
        upgrade(args.url)
        asyncio.run(copy_to_postgres(path, args.url))
        url = args.url
    print(f"database: {make_url(url).get_backend_name()}", flush=True)
    server = Server(url)
    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    print(f"{'page':<52} {'status':>6} {'cold ms':>8} {'median':>8} {'worst':>8}")
    try:
        with httpx.Client(base_url=server.url, headers=headers, timeout=60) as client:
            for page in pages(f"sqlite:///{path}"):  # the same ids on either database
                times = []
                status = 0
                for _ in range(args.runs + 1):
                    begun = time.perf_counter()
                    answer = client.get(page)
                    times.append((time.perf_counter() - begun) * 1000)
                    status = answer.status_code
                cold, warm = times[0], times[1:]
                print(
                    f"{page:<52} {status:>6} {cold:>8.1f} {statistics.median(warm):>8.1f} "
                    f"{max(warm):>8.1f}",
                    flush=True,
                )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
