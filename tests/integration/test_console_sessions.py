"""Console sessions end when they should (docs/console.md, "Sign-in"): a reload that
changes or removes ``auth.adminKey`` ends every session, one that adds it opens the
sign-in form, sign-out revokes the session on the server for every process sharing the
database, and wrong admin keys are throttled per client address."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import httpx
import pytest

from gateway.config.loader import load_config_text
from tests.support.console import console_yaml, csrf_of, signed_in
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, ENVIRON, TEST_KEY, RunningGateway

NEW_ADMIN_KEY = "sk-test-admin-rotated-7777777"
NO_SIGN_IN = "No <code>auth.adminKey</code> is configured"


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(console_yaml(upstream.url, sqlite_url))
    yield running
    running.stop()


def _reload(gateway: RunningGateway, text: str) -> None:
    config = load_config_text(text, {**ENVIRON, "NEW_ADMIN_KEY": NEW_ADMIN_KEY})
    gateway.server.run(gateway.runtime.reload(config, "sha256:test"))


def _with_admin(text: str, line: str | None) -> str:
    """The console config with its ``adminKey`` line replaced (None: removed)."""
    old = "  adminKey: ${ADMIN_KEY}\n"
    assert old in text
    return text.replace(old, f"  {line}\n" if line else "")


def _session_refused(client: httpx.Client) -> None:
    assert client.get("/admin/api/calls").status_code == 401
    page = client.get("/admin/providers")
    assert page.status_code == 303 and page.headers["location"].startswith("/admin/sign-in")


def test_a_reload_changing_the_admin_key_ends_every_session(
    gateway: RunningGateway, upstream: FakeUpstream, sqlite_url: str
) -> None:
    client = signed_in(gateway)
    assert client.get("/admin/api/calls").status_code == 200
    text = console_yaml(upstream.url, sqlite_url)
    _reload(gateway, _with_admin(text, "adminKey: ${NEW_ADMIN_KEY}"))
    _session_refused(client)
    # The new key signs in; the old one no longer does.
    assert signed_in(gateway, NEW_ADMIN_KEY).get("/admin/api/calls").status_code == 200
    with httpx.Client(base_url=gateway.url, timeout=10) as other:
        form = other.get("/admin/sign-in")
        wrong = other.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": csrf_of(form.text)},
            headers={"origin": gateway.url},
        )
        assert wrong.status_code == 401


def test_a_reload_removing_the_admin_key_ends_every_session(
    gateway: RunningGateway, upstream: FakeUpstream, sqlite_url: str
) -> None:
    client = signed_in(gateway)
    assert client.get("/admin/api/calls").status_code == 200
    _reload(gateway, _with_admin(console_yaml(upstream.url, sqlite_url), None))
    _session_refused(client)
    with httpx.Client(base_url=gateway.url, timeout=10) as other:
        assert NO_SIGN_IN in other.get("/admin/sign-in").text


def test_an_admin_key_added_by_reload_opens_the_sign_in_form(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with_key = console_yaml(upstream.url, sqlite_url)
    gateway = RunningGateway(_with_admin(with_key, None))
    try:
        with httpx.Client(base_url=gateway.url, timeout=10) as client:
            assert NO_SIGN_IN in client.get("/admin/sign-in").text
        _reload(gateway, with_key)
        client = signed_in(gateway)
        assert client.get("/admin/api/calls").status_code == 200
        assert client.get("/admin/providers").status_code == 200
    finally:
        gateway.stop()


def _sign_out(gateway: RunningGateway, client: httpx.Client) -> None:
    page = client.get("/admin/providers")
    assert page.status_code == 200
    out = client.post(
        "/admin/sign-out", data={"csrf": csrf_of(page.text)}, headers={"origin": gateway.url}
    )
    assert out.status_code == 303


def test_a_cookie_replayed_after_sign_out_is_refused_by_every_process(
    gateway: RunningGateway, upstream: FakeUpstream, sqlite_url: str
) -> None:
    other = RunningGateway(console_yaml(upstream.url, sqlite_url))  # the same database
    try:
        client = signed_in(gateway)
        token = client.cookies["console_session"]
        stolen = {"console_session": token}
        with httpx.Client(base_url=other.url, timeout=10, cookies=stolen) as elsewhere:
            assert elsewhere.get("/admin/api/calls").status_code == 200
            _sign_out(gateway, client)
            with httpx.Client(base_url=gateway.url, timeout=10, cookies=stolen) as replay:
                _session_refused(replay)
                assert replay.get("/admin/routing/calls").status_code == 401
            _session_refused(elsewhere)
        # Another session is untouched by this one's sign-out.
        assert signed_in(other).get("/admin/api/calls").status_code == 200
    finally:
        other.stop()


def test_sign_out_prunes_expired_revocations(gateway: RunningGateway) -> None:
    from datetime import UTC, datetime, timedelta

    from sqlalchemy import func, insert, select

    from gateway.db.console_tables import console_revoked_sessions as revoked

    async def seed() -> None:
        async with gateway.runtime.engine.begin() as connection:
            past = datetime.now(UTC) - timedelta(minutes=1)
            await connection.execute(insert(revoked), [{"session_id": "old", "expires_at": past}])

    async def count() -> int:
        async with gateway.runtime.engine.connect() as connection:
            return int(
                (await connection.execute(select(func.count()).select_from(revoked))).scalar_one()
            )

    gateway.server.run(seed())
    _sign_out(gateway, signed_in(gateway))
    assert gateway.server.run(count()) == 1  # the sign-out's own; the expired one is gone


def _wrong_key(client: httpx.Client, gateway: RunningGateway, address: str) -> httpx.Response:
    form = client.get("/admin/sign-in")
    return client.post(
        "/admin/sign-in",
        data={"key": TEST_KEY, "csrf": csrf_of(form.text)},
        headers={"origin": gateway.url, "x-forwarded-for": address},
    )


def test_wrong_admin_keys_are_throttled_per_client_address(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    # uvicorn takes X-Forwarded-For from 127.0.0.1, its default trusted proxy
    # (docs/operations.md, "Behind a reverse proxy"): the client address is the header's.
    attacker = "203.0.113.9"
    caplog.set_level(logging.WARNING, logger="gateway.console")
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        for _ in range(5):
            assert _wrong_key(client, gateway, attacker).status_code == 401
        throttled = _wrong_key(client, gateway, attacker)
        assert throttled.status_code == 429
        assert 1 <= int(throttled.headers["retry-after"]) <= 60
        assert "Too many wrong admin keys" in throttled.text
        # While throttled, even the right key from that address is refused.
        form = client.get("/admin/sign-in")
        right = client.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": csrf_of(form.text)},
            headers={"origin": gateway.url, "x-forwarded-for": attacker},
        )
        assert right.status_code == 429
    lines = [r.getMessage() for r in caplog.records if r.name == "gateway.console"]
    assert len(lines) == 1 and attacker in lines[0] and "throttled" in lines[0]
    assert all(ADMIN_KEY not in line and TEST_KEY not in line for line in lines)
    # Another address signs in with the right key.
    with httpx.Client(
        base_url=gateway.url, timeout=10, headers={"x-forwarded-for": "203.0.113.10"}
    ) as client:
        form = client.get("/admin/sign-in")
        answer = client.post(
            "/admin/sign-in",
            data={"key": ADMIN_KEY, "csrf": csrf_of(form.text)},
            headers={"origin": gateway.url},
        )
        assert answer.status_code == 303
        assert client.get("/admin/api/calls").status_code == 200
