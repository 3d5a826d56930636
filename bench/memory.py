"""The gateway's resident memory: idle after start, then under a few thousand calls.

Starts the static upstream (bench/static_upstream.py) and one gateway process
(`gateway serve`, telemetry on, SQLite), drives it with a pure-Python load driver
(aiohttp, keep-alive connections) through a mix of whole calls (fixed and criteria
mode), streams and calls under a token budget (which count the prompt's tokens),
and prints the process's resident memory (VmRSS) and its peak (VmHWM) after each
phase. ``--breakdown`` also prints what each import and each tiktoken encoding adds
to a fresh interpreter, one step after the other (an encoding as the gateway loads
it, then as tiktoken's own registry builds it, with its Python table of ranks).

    python bench/memory.py [--calls 3000] [--concurrency 16] [--models other|gpt-4o|both]
                           [--breakdown]

``--models`` names the two models: ``other`` (a non-OpenAI name, counted with
cl100k_base), ``gpt-4o`` (o200k_base), ``both`` (gpt-4o-mini and gpt-4: each
encoding loaded, the largest tokenizer footprint).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_config import KEY, bench_config  # noqa: E402 - the sibling module
from processes import free_port, wait_port  # noqa: E402

PROMPT = "Summarise the operator's notes in one short paragraph. " * 8  # ~450 bytes
KINDS = [
    ("fixed", False),
    ("routed", False),
    ("fixed", True),
    ("budgeted", False),
]
MODEL_NAMES = {
    "other": ("bench-model", "bench-model"),
    "gpt-4o": ("gpt-4o-mini", "gpt-4o"),
    "both": ("gpt-4o-mini", "gpt-4"),
}
# Each step runs in a fresh interpreter after the previous ones: (label, statement).
BREAKDOWN = [
    ("interpreter", "pass"),
    ("import msgspec, yaml", "import msgspec, yaml"),
    ("import sqlalchemy (asyncio)", "import sqlalchemy.ext.asyncio"),
    ("import aiohttp, httpx", "import aiohttp, httpx"),
    ("import litestar, uvicorn", "import litestar, uvicorn"),
    ("import alembic (migrations)", "import alembic.command"),
    ("import prometheus_client, redis", "import prometheus_client, redis"),
    ("import gateway.cli + gateway.api.app", "import gateway.cli, gateway.api.app"),
    ("import tiktoken", "import tiktoken"),
    (
        "cl100k_base as the gateway loads it",
        "from gateway.usage import tokens; keep.append(tokens._load_encoding('cl100k_base'))",
    ),
    (
        "o200k_base as the gateway loads it",
        "from gateway.usage import tokens; keep.append(tokens._load_encoding('o200k_base'))",
    ),
    (
        "cl100k_base as tiktoken.get_encoding builds it",
        "import tiktoken; keep.append(tiktoken.get_encoding('cl100k_base'))",
    ),
    (
        "o200k_base as tiktoken.get_encoding builds it",
        "import tiktoken; keep.append(tiktoken.get_encoding('o200k_base'))",
    ),
]
_BREAKDOWN_RUNNER = """
import os, sys
keep = []
def rss():
    for line in open(f"/proc/{os.getpid()}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
previous = rss()
for label, statement in STEPS:
    exec(statement)
    now = rss()
    print(f"{label:52} {now:7.1f} MB  (+{now - previous:5.1f})")
    previous = now
"""


def resident(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) of the process now, in MB (Linux /proc)."""
    figures: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            figures[name] = int(value.split()[0]) / 1024
    return figures.get("VmRSS", float("nan")), figures.get("VmHWM", float("nan"))


async def drive(port: int, calls: int, concurrency: int) -> dict[str, int]:
    """``calls`` calls over ``concurrency`` keep-alive connections; status counts."""
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    headers = {"authorization": f"Bearer {KEY}"}
    statuses: dict[str, int] = {}
    queue = iter(range(calls))
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector, headers=headers) as session:

        async def worker() -> None:
            for index in queue:
                model, stream = KINDS[index % len(KINDS)]
                body = {
                    "model": model,
                    "stream": stream,
                    "messages": [{"role": "user", "content": f"{PROMPT} #{index}"}],
                }
                async with session.post(url, json=body) as response:
                    await response.read()
                    key = f"{response.status}"
                    statuses[key] = statuses.get(key, 0) + 1

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return statuses


def breakdown() -> None:
    script = f"STEPS = {BREAKDOWN!r}\n{_BREAKDOWN_RUNNER}"
    print("what a fresh interpreter holds, step by step (VmRSS):")
    subprocess.run([sys.executable, "-c", script], check=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--models", choices=sorted(MODEL_NAMES), default="both")
    parser.add_argument("--breakdown", action="store_true")
    args = parser.parse_args()
    up_port, gw_port = free_port(), free_port()
    tmp = Path(tempfile.mkdtemp(prefix="gateway-bench-"))
    config = tmp / "bench.yaml"
    upstream_url = f"http://127.0.0.1:{up_port}"
    names = MODEL_NAMES[args.models]
    config.write_text(bench_config(str(tmp / "bench.db"), upstream_url, gw_port, names))
    upstream = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "static_upstream.py"), str(up_port)]
    )
    gateway = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", "serve", "--config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    phases: list[tuple[str, float, float, str]] = []
    try:
        wait_port(up_port)
        wait_port(gw_port)
        time.sleep(1.0)  # the lifespan has finished its startup work
        phases.append(("idle after start", *resident(gateway.pid), ""))
        warm = asyncio.run(drive(gw_port, 200, 4))
        phases.append(("after 200 calls (c=4)", *resident(gateway.pid), str(warm)))
        done = asyncio.run(drive(gw_port, args.calls, args.concurrency))
        label = f"after {args.calls} more calls (c={args.concurrency})"
        phases.append((label, *resident(gateway.pid), str(done)))
    finally:
        gateway.terminate()
        upstream.terminate()
        gateway.wait(15)
        upstream.wait(15)
    optional = [name for name in ("pydantic",) if importlib.util.find_spec(name) is not None]
    print(
        "conditions: one gateway process (uvicorn), static upstream on loopback, telemetry on "
        f"(SQLite), calls cycling fixed / criteria+callHistory / stream / token budget, "
        f"models named {' and '.join(names)}, "
        f"{os.cpu_count()} cores, TIKTOKEN_CACHE_DIR={os.environ.get('TIKTOKEN_CACHE_DIR', '')}"
    )
    if optional:  # litestar loads its plugin for it when installed (the openai SDK brings it)
        print(f"installed and loaded by litestar although not a dependency: {', '.join(optional)}")
    print(f"{'phase':40} {'VmRSS':>9} {'VmHWM':>9}  statuses")
    for name, rss, peak, note in phases:
        print(f"{name:40} {rss:6.1f} MB {peak:6.1f} MB  {note}")
    print("target: <= 150 MB resident per process under load")
    if args.breakdown:
        breakdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
