"""The Providers page, /admin/api/providers and /metrics show a circuit as routing treats
it: open until the cooldown's end, then half-open with a trial call allowed (the same on
every refresh, not "open until" a moment already past), closed once the trial succeeds."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support.console import console_yaml, signed_in
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, RunningGateway
from tests.support.routed import MESSAGES

COOLDOWN = 5  # seconds: long enough to read the open state on a busy machine, short enough to wait


def _circuits(gateway: RunningGateway) -> dict[str, dict[str, Any]]:
    answer = httpx.get(
        f"{gateway.url}/admin/api/providers",
        headers={"authorization": f"Bearer {ADMIN_KEY}"},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    return {p["id"]: p["circuit"] for p in answer.json()["providers"]}


def _gauges(gateway: RunningGateway) -> dict[str, float]:
    text = httpx.get(f"{gateway.url}/metrics", timeout=10).text
    return {
        match.group(1): float(match.group(2))
        for match in re.finditer(r'^gateway_circuit_state\{provider="([^"]+)"\} (\S+)$', text, re.M)
    }


def _wait_for(check: Callable[[], bool], seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _circuit_cell(page: str, provider: str) -> str:
    row = re.search(rf"<tr><td[^>]*>{provider}</td>(.*?)</tr>", page, re.S)
    assert row is not None, page
    return re.sub(r"<[^>]+>", " ", row.group(1))


def test_a_circuit_reads_open_then_half_open_then_closed_everywhere(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    gateway = RunningGateway(
        console_yaml(
            upstream.url,
            sqlite_url,
            circuit=f"{{failureThreshold: 2, cooldownSeconds: {COOLDOWN}}}",
        )
    )
    try:
        assert _circuits(gateway)["p-a"] == {"state": "closed", "until": None, "trial": None}
        upstream.behave("model-a", fail_always=500)
        client = gateway.client()
        for _ in range(2):
            with pytest.raises(Exception):  # noqa: B017 - the upstream's 500 becomes a 502
                client.chat.completions.create(model="steady", messages=MESSAGES)

        opened = _circuits(gateway)
        assert opened["p-a"]["state"] == "open" and opened["p-a"]["trial"] is None
        until = opened["p-a"]["until"]
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", until), until
        assert opened["p-b"] == {"state": "closed", "until": None, "trial": None}
        assert _gauges(gateway) == {"p-a": 2.0, "p-b": 0.0}
        console = signed_in(gateway)
        page = console.get("/admin/providers").text
        assert f"open until {until}" in _circuit_cell(page, "p-a")

        # The cooldown ends: routing would send the next call, as the trial.
        half_open = {"state": "half_open", "until": None, "trial": "allowed"}
        _wait_for(lambda: _circuits(gateway)["p-a"] == half_open)
        assert _gauges(gateway)["p-a"] == 1.0
        pages = [console.get("/admin/providers").text for _ in range(2)]
        console.close()
        cells = [_circuit_cell(page, "p-a") for page in pages]
        assert all("half-open: trial call allowed" in cell for cell in cells), cells
        assert not any("open until" in cell for cell in cells)
        assert _circuits(gateway)["p-a"] == half_open  # a later refresh reads the same

        upstream.behave("model-a")  # the provider is back: the trial call succeeds
        client.chat.completions.create(model="steady", messages=MESSAGES)
        assert _circuits(gateway)["p-a"] == {"state": "closed", "until": None, "trial": None}
        assert _gauges(gateway)["p-a"] == 0.0
    finally:
        gateway.stop()
