"""Keys and teams at runtime through /admin/keys, /admin/teams and /admin/audit, used by the
openai SDK against a real server (docs/api.md, "Keys and teams")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from gateway.db.tables import usage_daily
from tests.integration.budget_support import MESSAGES, budget_yaml, counter, query, running
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, ENVIRON, RunningGateway

ADMIN = {"authorization": f"Bearer {ADMIN_KEY}"}
TEAMS = """
teams:
  - {id: platform, configurations: [chat], budget: {daily: {requests: 3}},
     rateLimit: {requestsPerMinute: 600}, metadata: {owner: ops}}
"""


def _admin(gateway: RunningGateway, method: str, path: str, body: Any = None) -> httpx.Response:
    return httpx.request(method, f"{gateway.url}{path}", json=body, headers=ADMIN, timeout=10)


def _chat(gateway: RunningGateway, key: str, model: str = "chat") -> str | None:
    answer = gateway.client(key).chat.completions.create(model=model, messages=MESSAGES)
    return answer.choices[0].message.content


def test_a_created_key_calls_through_the_sdk_and_a_revoked_one_gets_401(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        created = _admin(
            gateway,
            "POST",
            "/admin/keys",
            {"id": "ci", "metadata": {"owner": "build"}, "rateLimit": {"requestsPerMinute": 100}},
        )
        assert created.status_code == 201, created.text
        view = created.json()
        key = view["key"]
        assert key.startswith("sk-gw-") and view["prefix"] == key[:12]
        assert view["source"] == "database" and view["rateLimit"] == {"requestsPerMinute": 100}
        assert _chat(gateway, key)
        listed = _admin(gateway, "GET", "/admin/keys").json()["data"]
        assert [(k["id"], k["source"]) for k in listed] == [
            ("alice", "file"),
            ("bob", "file"),
            ("ci", "database"),
        ]
        assert key not in str(listed) and "digest" not in listed[2]
        shown = _admin(gateway, "GET", "/admin/keys/ci").json()
        assert "key" not in shown and shown["status"] == "active"
        revoked = _admin(gateway, "DELETE", "/admin/keys/ci")
        assert revoked.status_code == 200 and revoked.json()["revokedAt"]
        with pytest.raises(openai.AuthenticationError):
            _chat(gateway, key)
        assert gateway.rows()[0]["api_key_id"] == "ci"
        assert _admin(gateway, "GET", "/admin/keys/ci").json()["status"] == "revoked"


def test_a_generated_id_configurations_and_patch(upstream: FakeUpstream, sqlite_url: str) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        created = _admin(gateway, "POST", "/admin/keys", {"configurations": ["embed"]}).json()
        key_id, key = created["id"], created["key"]
        assert key_id.startswith("key-")
        with pytest.raises(openai.PermissionDeniedError):
            _chat(gateway, key)
        patched = _admin(gateway, "PATCH", f"/admin/keys/{key_id}", {"configurations": None})
        assert patched.status_code == 200 and patched.json()["configurations"] is None
        assert _chat(gateway, key)
        unknown = _admin(gateway, "PATCH", f"/admin/keys/{key_id}", {"configurations": ["nope"]})
        assert unknown.status_code == 400
        assert unknown.json()["error"]["param"] == "configurations"
        bad = _admin(gateway, "POST", "/admin/keys", {"rateLimit": {"requestsPerMinute": 0}})
        assert bad.status_code == 400 and "requestsPerMinute" in bad.json()["error"]["message"]


def test_rotation_keeps_the_old_key_for_its_grace_then_refuses_it(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        old = _admin(gateway, "POST", "/admin/keys", {"id": "svc"}).json()["key"]
        rotated = _admin(gateway, "POST", "/admin/keys/svc/rotate", {"graceSeconds": 2})
        assert rotated.status_code == 200
        new = rotated.json()["key"]
        assert new != old
        assert _chat(gateway, old) and _chat(gateway, new)
        time.sleep(2.2)
        with pytest.raises(openai.AuthenticationError):
            _chat(gateway, old)
        assert _chat(gateway, new)
        again = _admin(gateway, "POST", "/admin/keys/svc/rotate", {}).json()["key"]
        with pytest.raises(openai.AuthenticationError):
            _chat(gateway, new)  # graceSeconds 0: the old key stops at once
        assert _chat(gateway, again)
        assert {r["api_key_id"] for r in gateway.rows()} == {"svc"}


def test_an_expired_key_is_refused_at_its_expiry(upstream: FakeUpstream, sqlite_url: str) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        soon = time.time() + 2
        expires = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(soon)) + "Z"
        created = _admin(gateway, "POST", "/admin/keys", {"id": "temp", "expiresAt": expires})
        key = created.json()["key"]
        assert _chat(gateway, key)
        time.sleep(max(0.0, int(soon) - time.time()) + 0.05)
        with pytest.raises(openai.AuthenticationError):
            _chat(gateway, key)
        assert _admin(gateway, "GET", "/admin/keys/temp").json()["status"] == "expired"


def test_file_keys_and_teams_are_read_only_and_writes_need_the_admin_key(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url, extra=TEAMS)) as gateway:
        for method, path in (
            ("PATCH", "/admin/keys/alice"),
            ("DELETE", "/admin/keys/alice"),
            ("POST", "/admin/keys/alice/rotate"),
        ):
            answer = _admin(gateway, method, path, {})
            assert answer.status_code == 409, (method, path)
            assert answer.json()["error"]["code"] == "key_from_file"
        team = _admin(gateway, "PATCH", "/admin/teams/platform", {"metadata": {}})
        assert team.status_code == 409 and team.json()["error"]["code"] == "team_from_file"
        taken = _admin(gateway, "POST", "/admin/keys", {"id": "alice"})
        assert taken.status_code == 409 and taken.json()["error"]["code"] == "already_exists"
        anonymous = httpx.post(f"{gateway.url}/admin/keys", json={}, timeout=10)
        assert anonymous.status_code == 401
        assert anonymous.json()["error"]["code"] == "invalid_api_key"
        user = httpx.get(
            f"{gateway.url}/admin/keys",
            headers={"authorization": "Bearer sk-test-alice-0123456789"},
            timeout=10,
        )
        assert user.status_code == 401
        missing = _admin(gateway, "GET", "/admin/keys/nobody")
        assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"


def test_a_team_meets_its_keys_configurations_and_its_budget_counts_all_its_keys_exactly(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url, extra=TEAMS)) as gateway:
        teams = _admin(gateway, "GET", "/admin/teams").json()["data"]
        assert teams[0]["id"] == "platform" and teams[0]["source"] == "file"
        assert teams[0]["rateLimit"] == {"requestsPerMinute": 600}
        one = _admin(gateway, "POST", "/admin/keys", {"id": "p1", "team": "platform"}).json()
        two = _admin(
            gateway,
            "POST",
            "/admin/keys",
            {"id": "p2", "team": "platform", "configurations": ["chat", "embed"]},
        ).json()
        with pytest.raises(openai.PermissionDeniedError):
            gateway.client(two["key"]).embeddings.create(model="embed", input="hi")
        assert _chat(gateway, one["key"])
        assert _chat(gateway, two["key"])
        assert _chat(gateway, one["key"])
        with pytest.raises(openai.RateLimitError) as caught:
            _chat(gateway, two["key"])
        assert "team 'platform' daily" in str(caught.value)
        used = counter(gateway, "team", "platform")
        assert used is not None and used["requests"] == 3
        rows = gateway.rows()
        answered = [r for r in rows if r["served_model"]]
        assert {r["team_id"] for r in answered} == {"platform"}
        daily = query(gateway, usage_daily.select())
        assert {(r["api_key_id"], r["team_id"]) for r in daily} == {
            ("p1", "platform"),
            ("p2", "platform"),
        }
        assert sum(r["requests"] for r in daily) == 3
        in_team = _admin(gateway, "GET", "/admin/keys?team=platform").json()["data"]
        assert [k["id"] for k in in_team] == ["p1", "p2"]


def test_runtime_teams_and_a_team_with_keys_cannot_be_deleted(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        made = _admin(
            gateway, "POST", "/admin/teams", {"id": "research", "budget": {"daily": {"cost": 1.5}}}
        )
        assert made.status_code == 201, made.text
        assert made.json()["budget"] == {"daily": {"cost": "1.5"}}
        key = _admin(gateway, "POST", "/admin/keys", {"id": "r1", "team": "research"}).json()
        assert _chat(gateway, key["key"])
        refused = _admin(gateway, "DELETE", "/admin/teams/research")
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "team_has_keys"
        patched = _admin(gateway, "PATCH", "/admin/teams/research", {"configurations": ["embed"]})
        assert patched.json()["configurations"] == ["embed"]
        with pytest.raises(openai.PermissionDeniedError):
            _chat(gateway, key["key"])  # the team's configurations now exclude chat
        assert _admin(gateway, "PATCH", "/admin/keys/r1", {"team": None}).status_code == 200
        assert _chat(gateway, key["key"])
        assert _admin(gateway, "DELETE", "/admin/teams/research").status_code == 200
        assert _admin(gateway, "GET", "/admin/teams/research").status_code == 404


def test_every_write_is_audited_without_key_material_and_pages(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        secrets = [_admin(gateway, "POST", "/admin/keys", {"id": "a1"}).json()["key"]]
        secrets.append(_admin(gateway, "POST", "/admin/keys/a1/rotate", {}).json()["key"])
        _admin(gateway, "PATCH", "/admin/keys/a1", {"metadata": {"note": "x"}})
        _admin(gateway, "DELETE", "/admin/keys/a1")
        first = _admin(gateway, "GET", "/admin/audit?limit=3").json()
        assert [e["action"] for e in first["data"]] == ["key.revoke", "key.update", "key.rotate"]
        assert first["hasMore"] is True
        assert {e["actor"] for e in first["data"]} == {"admin-key"}
        assert first["data"][1]["changes"] == {"metadata": '{"note": "x"}'}
        rest = _admin(gateway, "GET", f"/admin/audit?limit=3&before={first['nextBefore']}")
        assert [e["action"] for e in rest.json()["data"]] == ["key.create"]
        everything = str(first) + rest.text
        assert all(secret not in everything for secret in secrets)
        assert all(secret[12:] not in everything for secret in secrets)


def _cli(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gateway.cli", "keys", *args, "--config", str(config)],
        capture_output=True,
        text=True,
        env={**os.environ, **ENVIRON},
        timeout=60,
        check=False,
    )


def _until(check: Any, seconds: float = 1.5) -> float:
    """Seconds until ``check()`` is true (it must be within ``seconds``)."""
    started = time.monotonic()
    while not check():
        assert time.monotonic() - started < seconds, "not in force in time"
        time.sleep(0.05)
    return time.monotonic() - started


def _works(gateway: RunningGateway, key: str) -> bool:
    answer = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={"model": "chat", "messages": [{"role": "user", "content": "hi"}]},
        headers={"authorization": f"Bearer {key}"},
        timeout=10,
    )
    return answer.status_code == 200


def test_the_cli_creates_lists_rotates_and_revokes_keys_a_running_gateway_serves(
    upstream: FakeUpstream, sqlite_url: str, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(budget_yaml(upstream.url, sqlite_url, extra=TEAMS))
    with running(config.read_text()) as gateway:
        created = _cli(config, "create", "--id", "cli1", "--team", "platform")
        assert created.returncode == 0, created.stderr
        key = created.stdout.strip()
        assert key.startswith("sk-gw-") and key not in created.stderr
        assert json.loads(created.stderr)["team"] == "platform"
        _until(lambda: _works(gateway, key))
        listed = _cli(config, "list", "--team", "platform")
        assert [k["id"] for k in json.loads(listed.stdout)] == ["cli1"]
        shown = json.loads(_cli(config, "show", "cli1").stdout)
        assert shown["source"] == "database" and "key" not in shown
        rotated = _cli(config, "rotate", "cli1", "--grace-seconds", "60")
        new = rotated.stdout.strip()
        _until(lambda: _works(gateway, new))
        assert _works(gateway, key)  # within its grace
        assert _cli(config, "revoke", "cli1").returncode == 0
        _until(lambda: not _works(gateway, new) and not _works(gateway, key))
        refused = _cli(config, "revoke", "alice")
        assert refused.returncode == 1 and "409 key_from_file" in refused.stderr
        actors = {e["actor"] for e in _admin(gateway, "GET", "/admin/audit").json()["data"]}
        assert actors == {"cli"}
