"""The CPU of reading paced upstream streams, alone: the gateway's upstream client
(``gateway.upstream.http.UpstreamHTTP``) reading ``--streams`` concurrent paced streams
from bench/paced_upstream.py (its own process), nothing relayed. Prints this process's
CPU time per event read (an event arrives alone in its read, as a paced model sends it),
so two builds' reading paths can be compared (run it from each tree, alternating).

    python bench/upstream_read.py [--streams 300] [--tokens 600] [--rate 25]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from processes import free_port, start, stop, wait_port  # noqa: E402

from gateway.upstream.http import UpstreamHTTP  # noqa: E402


async def _stream(client: UpstreamHTTP, url: str, body: bytes) -> int:
    response = await client.post(url, {"content-type": "application/json"}, body, 120)
    reads = 0
    try:
        async for _ in response.chunks():
            reads += 1
    finally:
        await response.aclose()
    return reads


async def _run(url: str, streams: int, tokens: int) -> tuple[int, float, float]:
    body = json.dumps({"model": "m", "messages": [], "stream": True, "max_tokens": tokens}).encode()
    client = UpstreamHTTP()
    try:
        await _stream(client, url, body)  # the session, the first connection
        cpu, wall = time.process_time(), time.monotonic()
        reads = await asyncio.gather(*(_stream(client, url, body) for _ in range(streams)))
        return sum(reads), time.process_time() - cpu, time.monotonic() - wall
    finally:
        await client.aclose()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--streams", type=int, default=300)
    parser.add_argument("--tokens", type=int, default=600, help="tokens an answer")
    parser.add_argument("--rate", type=float, default=25, help="events a second")
    args = parser.parse_args()
    port = free_port()
    command = [sys.executable, str(ROOT / "bench" / "paced_upstream.py"), str(port)]
    upstream = start([*command, "--rate", str(args.rate), "--first-ms", "100"])
    try:
        wait_port(port)
        import uvloop

        url = f"http://127.0.0.1:{port}/v1/chat/completions"
        reads, cpu, wall = uvloop.run(_run(url, args.streams, args.tokens))
    finally:
        stop(upstream)
    print(
        f"{args.streams} streams, {reads} reads in {wall:.1f} s: "
        f"{cpu / reads * 1e6:.2f} µs CPU a read ({cpu / wall:.0%} of a core)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
