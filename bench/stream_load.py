"""Many long, paced streams at once: what a gateway adds to each, and what holding them costs.

Starts a paced upstream (bench/paced_upstream.py: first event after ``--first-ms``, then
``--rate`` events a second, 300-1,000 tokens an answer, usage in the last chunk; a share
``--whole-share`` of the calls are whole answers that take 1-5 s) and, one after the
other on that upstream, opens ``--streams`` concurrent calls for ``--duration`` seconds
(each caller calls again until then) against (bench/stream_targets.py):

- the upstream directly (the reference);
- the gateway (`gateway serve`, telemetry on in SQLite, metrics and the access log on,
  ``--workers`` processes); then on PostgreSQL when ``--postgres URL`` is given or
  GATEWAY_TEST_POSTGRES_URL is set (a scratch database, created and dropped here);
- the floor (bench/floor.py: raw ASGI + aiohttp, relays a stream unparsed);
- LiteLLM's proxy (``--litellm PATH``, else ``litellm`` on PATH) and Portkey's gateway
  (``--portkey PATH`` to its build/start-server.js) where installed; a line says so
  where they are not.

The load comes from a client in its own process (bench/stream_client.py: raw asyncio
connections, one per caller, kept alive). Every event the upstream writes carries the
moment it was written, so the client knows each event's delay. Printed for each target:
the streams held at once (peak), errors, time to first event p50/p99 and what each adds
over the direct run, the per-event delay p99 (upstream write to client read) and the
inter-event gap p99 and what each adds, resident memory at the plateau (all streams
open) and per open stream over the idle process, CPU per relayed event (the target's
process(es)), rows written vs calls made, and a health probe every 100 ms during the
run (p50, p99) (bench/stream_measure.py).

    python bench/stream_load.py [--streams 2000] [--duration 30] [--workers 1]
        [--first-ms 300] [--rate 25] [--tokens-per-event 3] [--whole-share 0.1]
        [--targets direct,sqlite,postgres,floor,litellm,portkey] [--postgres URL]
        [--litellm PATH] [--portkey PATH] [--target-cpus 1 --load-cpus 0]
        [--profile SECONDS [--gil]]   # py-spy the gateway during its run (pip install py-spy)

The machine is what limits this benchmark: the upstream and the client are processes
too, and they need CPU beside the target (their shares are printed). ``--target-cpus``
and ``--load-cpus`` pin the target's processes (every thread) and the upstream with the
load client to separate cores, so that what a target adds is its own work and not its
wait for a core the load needs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from processes import free_port, pin, start, stop, wait_port  # noqa: E402 - the siblings
from stream_measure import Figures, percentile  # noqa: E402
from stream_targets import run_target  # noqa: E402


def print_figures(args: argparse.Namespace, runs: list[Figures], skipped: list[str]) -> None:
    print(
        f"\nconditions: {args.streams} concurrent callers for {args.duration:g} s (ramp "
        f"{args.ramp:g} s), first event after {args.first_ms:g} ms, {args.rate:g} events/s, "
        f"{args.tokens_per_event} tokens an event, 300-1,000 tokens an answer, "
        f"{100 * args.whole_share:g} % whole answers of 1-5 s; gateway: {args.workers} "
        f"worker(s), telemetry, metrics and the access log on; {os.cpu_count()} cores, "
        f"load average before the run {args.load_before}{_pinning(args)}"
    )
    direct = next((run for run in runs if run.name == "direct"), None)

    def added(run: Figures, values: str, share: float) -> str:
        mine = percentile(run.client[values], share)
        if direct is None or run is direct:
            return f"{mine:8.1f}"
        base = percentile(direct.client[values], share)
        return f"{mine:8.1f} ({mine - base:+7.1f})"

    print(
        "\n(ms; in brackets: added over the direct run)\n"
        f"{'target':22} {'held':>5} {'calls':>6} {'errors':>6}  {'TTFT p50':>18} {'TTFT p99':>18}"
        f"  {'delay p99':>18} {'gap p99':>18}  {'/healthz p50/p99':>16}"
    )
    for run in runs:
        c = run.client
        health = f"{percentile(run.health, 0.5):.1f}/{percentile(run.health, 0.99):.1f}"
        print(
            f"{run.name:22} {c['peak']:5d} {c['calls']:6d} {c['errors']:6d}  "
            f"{added(run, 'ttft', 0.5):>18} {added(run, 'ttft', 0.99):>18}  "
            f"{added(run, 'delays', 0.99):>18} {added(run, 'gaps', 0.99):>18}  {health:>16}"
        )
    print(
        f"\n{'target':22} {'RSS idle':>9} {'plateau':>9} {'per stream':>11} "
        f"{'events':>8} {'CPU/event':>10} {'CPU share':>9} {'rows/calls':>12} "
        f"{'client CPU':>10} {'upstream CPU':>12}"
    )
    for run in runs:
        c = run.client
        per = (run.rss_plateau_kb - run.rss_idle_kb) / c["peak"] if c["peak"] else float("nan")
        per_event = run.cpu / c["events"] * 1e6 if c["events"] else float("nan")
        rows = "—" if run.rows is None else f"{run.rows}/{c['calls']}"
        print(
            f"{run.name:22} {run.rss_idle_kb / 1024:7.0f}MB {run.rss_plateau_kb / 1024:7.0f}MB "
            f"{per:8.1f}KiB {c['events']:8d} {per_event:8.1f}µs {run.cpu / c['wall']:8.0%} "
            f"{rows:>12} {c['cpu'] / c['wall']:9.0%} {c['upstream_cpu'] / c['wall']:11.0%}"
        )
    for run in runs:
        c = run.client
        if c["errors"] or c["no_usage"] or run.health_failures:
            print(
                f"  {run.name}: errors {c['error_kinds']}, streams without usage "
                f"{c['no_usage']}, /healthz failures {run.health_failures}"
            )
    for line in skipped:
        print(line)
    print(
        "\ntargets (one gateway process, N = 2,000): 0 errors, 0 rows lost, added TTFT "
        "<= 5 ms p99, added gap <= 2 ms p99, <= 32 KiB per open stream, /healthz <= 50 ms p99"
    )


def _pinning(args: argparse.Namespace) -> str:
    if not (args.target_cpus or args.load_cpus):
        return ""
    cores = [f"targets on cores {sorted(args.target_cpus or [])}"]
    return "; " + ", ".join([*cores, f"upstream and client on {sorted(args.load_cpus or [])}"])


def _cpus(text: str | None) -> set[int] | None:
    return None if not text else {int(cpu) for cpu in text.split(",")}


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Many paced streams through each target.")
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--duration", type=float, default=30, help="seconds callers call")
    parser.add_argument("--ramp", type=float, default=2, help="callers start over this")
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--first-ms", type=float, default=300)
    parser.add_argument("--rate", type=float, default=25)
    parser.add_argument("--tokens-per-event", type=int, default=3)
    parser.add_argument("--whole-share", type=float, default=0.1)
    parser.add_argument("--timeout", type=float, default=120, help="per call, seconds")
    parser.add_argument("--sample", type=float, default=0.2, help="share of events timed")
    parser.add_argument("--targets", default="direct,sqlite,postgres,floor,litellm,portkey")
    parser.add_argument("--postgres", default=os.environ.get("GATEWAY_TEST_POSTGRES_URL"))
    parser.add_argument("--litellm", help="LiteLLM's `litellm` command (default: on PATH)")
    parser.add_argument("--portkey", help="Portkey gateway's build/start-server.js")
    parser.add_argument("--target-cpus", help="pin each target to these cores, e.g. 1")
    parser.add_argument("--load-cpus", help="pin the upstream and the client, e.g. 0")
    parser.add_argument(
        "--profile", type=float, default=0, help="py-spy the gateway this many seconds"
    )
    parser.add_argument("--gil", action="store_true", help="py-spy --gil (with --profile)")
    args = parser.parse_args()
    args.target_cpus = _cpus(args.target_cpus)
    args.load_cpus = _cpus(args.load_cpus)
    return args


def main() -> int:
    args = _arguments()
    args.load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    scratch = Path(tempfile.mkdtemp(prefix="gateway-streamload-"))
    up_port = free_port()
    upstream_url = f"http://127.0.0.1:{up_port}"
    paced = [sys.executable, str(ROOT / "bench" / "paced_upstream.py"), str(up_port)]
    paced += ["--first-ms", str(args.first_ms), "--rate", str(args.rate)]
    upstream = start([*paced, "--tokens-per-event", str(args.tokens_per_event)])
    if args.load_cpus:
        pin(upstream.pid, args.load_cpus)
    runs: list[Figures] = []
    skipped: list[str] = []
    try:
        wait_port(up_port)
        for name in args.targets.split(","):
            outcome = run_target(name, args, upstream_url, upstream.pid, scratch)
            if isinstance(outcome, str):
                skipped.append(outcome)
            else:
                runs.append(outcome)
    finally:
        stop(upstream)
        shutil.rmtree(scratch, ignore_errors=True)
    print_figures(args, runs, skipped)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
