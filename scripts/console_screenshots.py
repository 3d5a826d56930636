"""Screenshots of every console view at 1400 px and 390 px, into docs/console/.

    python scripts/console_screenshots.py [--out docs/console]

Starts the test suite's fake upstream and the real gateway on loopback, makes a
few kinds of calls (routed, fixed, a budget refusal, a failing provider whose
circuit opens), adds a week of generated calls through the telemetry writer,
then has headless Chromium (/usr/bin/chromium, driven by Playwright) sign in and
photograph each view.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import shutil
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai
from playwright.sync_api import sync_playwright

from gateway.telemetry.records import TelemetryRecord
from tests.support.console import console_yaml
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, RunningGateway
from tests.support.routed import MESSAGES


def history(gateway: RunningGateway, count: int) -> None:
    rng = random.Random(7)
    now = datetime.now(UTC)
    for n in range(count):
        ok = rng.random() > 0.07
        configuration, model, provider = rng.choice(
            [("smart", "model-b", "p-b"), ("smart", "model-a", "p-a"), ("steady", "model-a", "p-a")]
        )
        tokens_in, tokens_out = rng.randrange(100, 3000), rng.randrange(20, 600)
        price_in, price_out = (2.0, 8.0) if model == "model-a" else (0.1, 0.4)
        gateway.runtime.writer.submit(
            TelemetryRecord(
                created_at=now - timedelta(minutes=rng.randrange(7 * 24 * 60)),
                request_id=f"history-{n}",
                operation="chat",
                configuration=configuration,
                api_key_id="alice",
                provider=provider,
                model=model,
                served_provider=provider if ok else None,
                served_model=model if ok else None,
                success=ok,
                http_status=200 if ok else 502,
                error_class=None if ok else "upstream_5xx",
                latency_ms=rng.lognormvariate(6.3, 0.5),
                actual_input_tokens=tokens_in if ok else None,
                actual_output_tokens=tokens_out if ok else None,
                actual_cost=Decimal(
                    str(round((tokens_in * price_in + tokens_out * price_out) / 1e6, 10))
                )
                if ok
                else None,
                usage_source="provider" if ok else "none",
                routing_policy_mode="economy" if configuration == "smart" else "",
            )
        )
    gateway.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("docs/console"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="console-shots-"))
    upstream = FakeUpstream()
    gateway = RunningGateway(
        console_yaml(
            upstream.url,
            f"sqlite+aiosqlite:///{folder / 'gateway.db'}",
            circuit="{failureThreshold: 2, cooldownSeconds: 600}",
        )
    )
    try:
        history(gateway, 400)
        client = gateway.client()
        for _ in range(3):
            client.chat.completions.create(model="smart", messages=MESSAGES)
        client.chat.completions.create(model="steady", messages=MESSAGES)
        client.chat.completions.create(model="capped", messages=MESSAGES)
        with contextlib.suppress(openai.RateLimitError):  # the budget's 429, on its own view
            client.chat.completions.create(model="capped", messages=MESSAGES)
        upstream.behave("model-a", fail_always=500)
        for _ in range(2):
            with contextlib.suppress(openai.APIStatusError):  # opens p-a's circuit
                client.chat.completions.create(model="steady", messages=MESSAGES)
        rows = gateway.rows()
        routed = next(
            r for r in reversed(rows) if r["configuration"] == "smart" and r["routing_detail"]
        )
        refused = next(r for r in rows if r["error_class"] == "budget_exceeded")
        views = {
            "overview": "/admin/?range=7d",
            "calls": "/admin/calls",
            "decision": f"/admin/calls/{routed['id']}",
            "budget-refusal": f"/admin/calls/{refused['id']}",
            "why": "/admin/why?configuration=smart&operation=chat",
            "providers": "/admin/providers",
            "budgets": "/admin/budgets",
            "sign-in": "/admin/sign-in",
        }
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=shutil.which("chromium"), headless=True, args=["--no-sandbox"]
            )
            for width in (1400, 390):
                context = browser.new_context(viewport={"width": width, "height": 900})
                page = context.new_page()
                page.goto(f"{gateway.url}/admin/sign-in")
                page.screenshot(path=str(args.out / f"sign-in-{width}.png"))
                page.get_by_label("Admin key").fill(ADMIN_KEY)
                page.get_by_role("button", name="Sign in").click()
                page.wait_for_url("**/admin/")
                for name, path in views.items():
                    if name == "sign-in":
                        continue
                    page.goto(f"{gateway.url}{path}")
                    page.screenshot(path=str(args.out / f"{name}-{width}.png"), full_page=True)
                    print(args.out / f"{name}-{width}.png")
                context.close()
            browser.close()
    finally:
        gateway.stop()
        upstream.close()


if __name__ == "__main__":
    main()
