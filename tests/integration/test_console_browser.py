"""The console in headless Chromium (Playwright driving Debian's /usr/bin/chromium).

Signs in through the form, reads a routed call's decision, a budget refusal, an open
circuit, filters and pages the calls, checks the phone width, and fails on any console
error or CSP violation the pages produce.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.console import console_yaml, seed_calls
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, RunningGateway
from tests.support.routed import MESSAGES, explain

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium on PATH (apt-get install chromium; .ci/run does)"
)
sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is a dev dependency")

VIEWS = (
    "/admin/",
    "/admin/calls",
    "/admin/why?configuration=smart&operation=chat",
    "/admin/providers",
    "/admin/budgets",
    "/admin/manage/keys",
    "/admin/manage/teams",
)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        yield launched
        launched.close()


class Tab:
    """One page with every console message and page error it produced."""

    def __init__(self, browser: Any, base: str, width: int = 1400) -> None:
        self.base = base
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.errors.append(f"pageerror: {error}"))

    def _console(self, message: Any) -> None:
        if message.type in ("error", "warning"):
            self.errors.append(f"{message.type}: {message.text}")

    def go(self, path: str) -> Any:
        response = self.page.goto(f"{self.base}{path}")
        assert response is not None
        return response

    def sign_in(self) -> None:
        self.go("/admin/calls")
        assert "/admin/sign-in" in self.page.url
        self.page.get_by_label("Admin key").fill(ADMIN_KEY)
        self.page.get_by_role("button", name="Sign in").click()
        self.page.wait_for_url(f"{self.base}/admin/calls")

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(console_yaml(upstream.url, sqlite_url))
    yield running
    running.stop()


def test_sign_in_then_a_routed_decision_agrees_with_its_row_and_the_readout(
    browser: Any, gateway: RunningGateway
) -> None:
    gateway.client().chat.completions.create(model="smart", messages=MESSAGES)
    (row,) = gateway.rows(expect=1)
    readout = explain(gateway, "smart", "chat")
    tab = Tab(browser, gateway.url)
    try:
        tab.sign_in()
        tab.page.get_by_role("link", name=row["created_at"].strftime("%Y-%m-%d %H:%M:%S")).click()
        tab.page.wait_for_url(f"{gateway.url}/admin/calls/{row['id']}")
        text = tab.page.inner_text("main")
        assert f"{row['served_model']} ({row['served_provider']})" in text
        assert row["served_model"] == readout["selected"]["model"]
        candidates = tab.page.get_by_role("region", name="Candidates")
        cells = candidates.locator("tbody tr").all()
        assert len(cells) == len(readout["candidates"])
        for line, expected in zip(cells, readout["candidates"], strict=True):
            values = line.locator("td").all_inner_texts()
            assert values[1] == expected["model"] and values[2] == expected["provider"]
            assert values[4] == f"{expected['score']:.5f}"
        assert "economy" in text and "cost basis" in text
        assert f"{row['routing_cost_basis']}" in text
        tab.page.get_by_role("link", name="Why this model now?").click()
        tab.page.wait_for_url("**/admin/why?configuration=smart&operation=chat")
        assert readout["selected"]["model"] in tab.page.inner_text("main")
    finally:
        tab.close()
    assert tab.errors == []


def test_a_budget_refusal_shows_its_cause_not_routing_rejections(
    browser: Any, gateway: RunningGateway
) -> None:
    client = gateway.client()
    client.chat.completions.create(model="capped", messages=MESSAGES)
    with pytest.raises(Exception, match="budget"):
        client.chat.completions.create(model="capped", messages=MESSAGES)
    refused = gateway.rows(expect=2)[1]
    assert refused["error_class"] == "budget_exceeded"
    tab = Tab(browser, gateway.url)
    try:
        tab.sign_in()
        tab.go("/admin/calls?status=error")
        rows = tab.page.locator("main table tbody tr").all()
        assert len(rows) == 1 and "429 budget_exceeded" in rows[0].inner_text()
        rows[0].get_by_role("link").click()
        error = tab.page.get_by_role("region", name="Error")
        assert "Refused by a budget" in error.inner_text()
        assert "budget_exceeded" in error.inner_text() and "429" in error.inner_text()
        assert "daily" in error.inner_text()  # the budget's own message
        main = tab.page.inner_text("main")
        # The cause comes first; the decision taken before the refusal follows, labelled.
        assert main.index("Refused by a budget") < main.index("Decision (taken before")
    finally:
        tab.close()
    assert tab.errors == []


def test_an_open_circuit_shows_on_providers(
    browser: Any, upstream: FakeUpstream, sqlite_url: str
) -> None:
    gateway = RunningGateway(
        console_yaml(
            upstream.url, sqlite_url, circuit="{failureThreshold: 2, cooldownSeconds: 300}"
        )
    )
    upstream.behave("model-a", fail_always=500)
    tab = Tab(browser, gateway.url)
    try:
        client = gateway.client()
        for _ in range(2):
            with pytest.raises(Exception):  # noqa: B017 - the upstream's 500 becomes a 502
                client.chat.completions.create(model="steady", messages=MESSAGES)
        gateway.flush()
        tab.sign_in()
        tab.go("/admin/providers")
        providers = tab.page.get_by_role("region", name="Providers")
        line_a = providers.locator("tbody tr", has_text="p-a").inner_text()
        line_b = providers.locator("tbody tr", has_text="p-b").inner_text()
        assert "open until" in line_a and "closed" in line_b
        assert "\t2\t2\t" in line_a  # two calls, two errors
    finally:
        tab.close()
        gateway.stop()
    assert tab.errors == []


def test_filters_and_paging_keep_their_state_in_the_address(
    browser: Any, gateway: RunningGateway
) -> None:
    seed_calls(gateway, 130, ("steady", "smart"))
    rows = gateway.rows(expect=130)
    steady_ids = sorted((r["id"] for r in rows if r["configuration"] == "steady"), reverse=True)
    tab = Tab(browser, gateway.url)
    try:
        tab.sign_in()
        tab.go("/admin/calls")
        tab.page.get_by_label("Configuration").select_option("steady")
        tab.page.get_by_role("button", name="Apply").click()
        tab.page.wait_for_url("**/admin/calls?configuration=steady*")

        def shown_ids() -> list[int]:
            links = tab.page.locator("main table tbody tr td:first-child a").all()
            return [int(link.get_attribute("href").rsplit("/", 1)[1]) for link in links]

        assert shown_ids() == steady_ids[:50]
        tab.page.get_by_role("link", name="Older →").click()
        tab.page.wait_for_url("**before=*")
        assert "configuration=steady" in tab.page.url
        assert shown_ids() == steady_ids[50:65]
        assert tab.page.get_by_role("link", name="Older →").count() == 0
        tab.page.get_by_role("link", name="← Newer").click()
        tab.page.wait_for_url("**after=*")
        assert shown_ids() == steady_ids[:50]
        # The shared address opens the same filtered page in a new tab.
        shared = Tab(browser, gateway.url)
        shared.context.add_cookies(tab.context.cookies())
        shared.go("/admin/calls?configuration=steady&status=error")
        failed = [r["id"] for r in rows if r["configuration"] == "steady" and not r["success"]]
        links = shared.page.locator("main table tbody tr td:first-child a").all()
        assert sorted(int(x.get_attribute("href").rsplit("/", 1)[1]) for x in links) == sorted(
            failed
        )
        shared.close()
    finally:
        tab.close()
    assert tab.errors == []


def test_every_view_fits_a_phone_without_horizontal_page_scrolling(
    browser: Any, gateway: RunningGateway
) -> None:
    gateway.client().chat.completions.create(model="smart", messages=MESSAGES)
    seed_calls(gateway, 20, ("steady",))
    (first, *_) = gateway.rows(expect=21)
    tab = Tab(browser, gateway.url, width=390)
    try:
        tab.sign_in()
        for path in (*VIEWS, f"/admin/calls/{first['id']}", "/admin/sign-in"):
            tab.go(path)
            width = tab.page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)
            body = tab.page.evaluate("document.body.scrollWidth")
            assert body <= 390, (path, body)
        # Keyboard: the skip link is the first stop, then the navigation.
        tab.go("/admin/calls")
        tab.page.keyboard.press("Tab")
        assert tab.page.evaluate("document.activeElement.textContent") == "Skip to content"
    finally:
        tab.close()
    assert tab.errors == []


def test_auto_refresh_pauses_and_stays_paused(browser: Any, gateway: RunningGateway) -> None:
    tab = Tab(browser, gateway.url)
    try:
        tab.sign_in()
        button = tab.page.get_by_role("button", name="Pause auto-refresh (30 s)")
        assert button.get_attribute("aria-pressed") == "false"
        button.click()
        resumed = tab.page.get_by_role("button", name="Resume auto-refresh")
        assert resumed.get_attribute("aria-pressed") == "true"
        tab.go("/admin/providers")
        assert tab.page.get_by_role("button", name="Resume auto-refresh").count() == 1
    finally:
        tab.close()
    assert tab.errors == []


def _admin(gateway: RunningGateway, method: str, path: str, body: Any = None) -> Any:
    import httpx

    headers = {"authorization": f"Bearer {ADMIN_KEY}"}
    return httpx.request(method, f"{gateway.url}{path}", json=body, headers=headers, timeout=10)


def test_a_key_created_on_the_keys_page_is_shown_once_serves_then_revoked_gets_401(
    browser: Any, gateway: RunningGateway
) -> None:
    import openai

    assert _admin(gateway, "POST", "/admin/teams", {"id": "research"}).status_code == 201
    tab = Tab(browser, gateway.url)
    tab.page.on("dialog", lambda dialog: dialog.accept())
    try:
        tab.sign_in()
        nav = tab.page.get_by_role("navigation", name="Console")
        nav.get_by_role("link", name="Keys", exact=True).click()
        tab.page.wait_for_url(f"{gateway.url}/admin/manage/keys")
        keys = tab.page.get_by_role("region", name="Keys")
        alice = keys.locator("tbody tr", has_text="alice").inner_text()
        assert "file" in alice and "read-only" in alice  # a file key has no buttons
        form = tab.page.locator("#create-key")
        form.get_by_label("Id (optional)").fill("ui-made")
        form.get_by_label("Team").select_option("research")
        form.get_by_label("Configurations (none chosen: every one)").select_option(["steady"])
        form.get_by_role("button", name="Create key").click()
        shown = tab.page.locator("#new-key-value")
        shown.wait_for(state="visible")
        key = shown.inner_text()
        assert key.startswith("sk-gw-")
        assert tab.page.locator("#new-key-id").inner_text() == "ui-made"
        tab.page.get_by_role("button", name="Copy").click()
        tab.page.locator("#copy-state").filter(has_text="C").or_(
            tab.page.locator("#copy-state").filter(has_text="S")
        ).wait_for()
        answer = gateway.client(key).chat.completions.create(model="steady", messages=MESSAGES)
        assert answer.choices[0].message.content  # 200 through the SDK
        # Written through the admin API with the session's CSRF token: audited as the session.
        (entry, *_) = _admin(gateway, "GET", "/admin/audit").json()["data"]
        assert entry["action"].startswith("key") and entry["actor"].startswith("session:")
        # Shown once: the list after a reload names the key by id and prefix only.
        tab.go("/admin/manage/keys")
        assert key not in tab.page.content()
        line = keys.locator("tbody tr", has_text="ui-made")
        text = line.inner_text()
        assert "research" in text and key[:12] in text and "database" in text
        assert "active" in text
        line.get_by_role("button", name="Revoke").click()
        tab.page.wait_for_load_state()
        keys.locator("tbody tr", has_text="ui-made").filter(has_text="revoked").wait_for()
        assert line.get_by_role("button").count() == 0
        with pytest.raises(openai.AuthenticationError):
            gateway.client(key).chat.completions.create(model="steady", messages=MESSAGES)
        # The team filter keeps to the team's keys.
        tab.go("/admin/manage/keys?team=research")
        ids = keys.locator("tbody tr td:first-child").all_inner_texts()
        assert ids == ["ui-made"]
    finally:
        tab.close()
    assert tab.errors == []


def test_rotate_on_the_keys_page_shows_the_new_key_and_the_old_stops(
    browser: Any, gateway: RunningGateway
) -> None:
    import openai

    old = _admin(gateway, "POST", "/admin/keys", {"id": "turn"}).json()["key"]
    tab = Tab(browser, gateway.url)
    tab.page.on("dialog", lambda dialog: dialog.accept())
    try:
        tab.sign_in()
        tab.go("/admin/manage/keys")
        line = tab.page.get_by_role("region", name="Keys").locator("tbody tr", has_text="turn")
        line.get_by_role("button", name="Rotate").click()
        shown = tab.page.locator("#new-key-value")
        shown.wait_for(state="visible")
        new = shown.inner_text()
        assert new.startswith("sk-gw-") and new != old
        assert gateway.client(new).chat.completions.create(model="steady", messages=MESSAGES)
        with pytest.raises(openai.AuthenticationError):
            gateway.client(old).chat.completions.create(model="steady", messages=MESSAGES)
    finally:
        tab.close()
    assert tab.errors == []


def test_the_teams_page_shows_budget_spend_limits_and_keys(
    browser: Any, gateway: RunningGateway
) -> None:
    made = _admin(
        gateway,
        "POST",
        "/admin/teams",
        {
            "id": "research",
            "budget": {"daily": {"requests": 10}},
            "rateLimit": {"requestsPerMinute": 600},
        },
    )
    assert made.status_code == 201, made.text
    assert _admin(gateway, "POST", "/admin/teams", {"id": "idle"}).status_code == 201
    key = _admin(gateway, "POST", "/admin/keys", {"id": "r1", "team": "research"}).json()["key"]
    for _ in range(3):
        gateway.client(key).chat.completions.create(model="steady", messages=MESSAGES)
    gateway.flush()
    tab = Tab(browser, gateway.url)
    try:
        tab.sign_in()
        nav = tab.page.get_by_role("navigation", name="Console")
        nav.get_by_role("link", name="Teams", exact=True).click()
        tab.page.wait_for_url(f"{gateway.url}/admin/manage/teams")
        teams = tab.page.get_by_role("region", name="Teams")
        research = teams.locator("tbody tr", has_text="research").inner_text()
        assert "daily: requests 10" in research
        assert "day requests: 3 / 10" in research
        assert "600 requests/min" in research
        assert research.rstrip().endswith("1")  # one key
        idle = teams.locator("tbody tr", has_text="idle").inner_text()
        assert "no budget" in idle and idle.rstrip().endswith("0")
        teams.locator("tbody tr", has_text="research").get_by_role("link", name="1").click()
        tab.page.wait_for_url("**/admin/manage/keys?team=research")
        ids = tab.page.get_by_role("region", name="Keys").locator("tbody tr td:first-child")
        assert ids.all_inner_texts() == ["r1"]
    finally:
        tab.close()
    assert tab.errors == []
