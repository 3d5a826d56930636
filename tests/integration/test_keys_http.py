"""Gateway keys: allowed configurations, keyHash from the CLI, and no key ever in clear."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import select

from gateway.db.base import metadata
from tests.integration.budget_support import MESSAGES, budget_yaml, query, running
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, OTHER_KEY, TEST_KEY, RunningGateway

CAROL_KEY = "sk-test-carol-only-hashed-31415"
WRONG_KEY = "sk-test-wrong-27182818"
UPSTREAM_KEY = "sk-upstream-secret-42"


def _hash_from_cli(key: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gateway.cli", "keys", "hash"],
        input=key + "\n",
        capture_output=True,
        text=True,
        check=True,
    )
    assert key not in done.stdout and key not in done.stderr
    return done.stdout.strip()


def test_a_key_gets_403_on_a_configuration_it_may_not_use(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    with running(budget_yaml(upstream.url, sqlite_url)) as gateway:
        bob = gateway.client(OTHER_KEY)
        bob.chat.completions.create(model="chat", messages=MESSAGES)
        with pytest.raises(openai.PermissionDeniedError) as caught:
            bob.embeddings.create(model="embed", input="hi")
        assert upstream.calls["embed-model"] == 0
        rows = gateway.rows()
    body = caught.value.body
    assert isinstance(body, dict) and body["code"] == "configuration_not_allowed"
    assert body["type"] == "permission_error"
    refused = rows[-1]
    assert (refused["api_key_id"], refused["configuration"]) == ("bob", "embed")
    assert refused["http_status"] == 403 and refused["provider"] is None


def test_a_key_hash_printed_by_the_cli_is_accepted_in_place_of_the_key(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    key_hash = _hash_from_cli(CAROL_KEY)
    assert key_hash.startswith("sha256:") and len(key_hash) == 7 + 64
    carol = f'    - {{id: carol, keyHash: "{key_hash}", configurations: [chat]}}'
    with running(budget_yaml(upstream.url, sqlite_url, keys=carol)) as gateway:
        answer = gateway.client(CAROL_KEY).chat.completions.create(model="chat", messages=MESSAGES)
        assert answer.choices[0].message.content
        with pytest.raises(openai.AuthenticationError):
            gateway.client(key_hash).chat.completions.create(model="chat", messages=MESSAGES)
        assert gateway.rows()[0]["api_key_id"] == "carol"


def _all_database_text(gateway: RunningGateway) -> str:
    values: list[str] = []
    for table in metadata.sorted_tables:
        for row in query(gateway, select(table)):
            values.extend(_text(value) for value in row.values())
    return "\n".join(values)


def _text(value: Any) -> str:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", "replace")
    return str(value)


def _answers(gateway: RunningGateway) -> list[httpx.Response]:
    calls = [
        (TEST_KEY, "chat", {}),  # answered
        (TEST_KEY, "chat", {}),  # refused by alice's budget
        (OTHER_KEY, "embed", {}),  # 403
        (WRONG_KEY, "chat", {}),  # 401
        (OTHER_KEY, "chat", {"x-gateway-cache": "no-cache"}),
    ]
    answers = []
    with httpx.Client(base_url=gateway.url, timeout=10) as client:
        for key, configuration, headers in calls:
            body = {"model": configuration, "messages": MESSAGES, "input": "hi"}
            path = "/v1/embeddings" if configuration == "embed" else "/v1/chat/completions"
            sent = {"authorization": f"Bearer {key}", **headers}
            answers.append(client.post(path, json=body, headers=sent))
        admin = {"authorization": f"Bearer {ADMIN_KEY}"}
        answers.append(client.get("/admin/routing/calls", headers=admin))
    return answers


def test_no_key_is_ever_stored_logged_or_answered_in_clear(
    upstream: FakeUpstream, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    database_file = tmp_path / "gateway.db"
    yaml = budget_yaml(
        upstream.url,
        f"sqlite+aiosqlite:///{database_file}",
        alice="budget: {daily: {requests: 1}}",
    )
    with running(yaml) as gateway:
        answers = _answers(gateway)
        assert [a.status_code for a in answers] == [200, 429, 403, 401, 200, 200]
        stored = _all_database_text(gateway)
    on_disk = b"".join(path.read_bytes() for path in tmp_path.glob("gateway.db*"))
    answered = "\n".join(f"{a.headers}\n{a.text}" for a in answers)
    logged = caplog.text
    # Records of the server's other threads land in the same capture as the test's.
    assert any(record.threadName != "MainThread" for record in caplog.records)
    for secret in (TEST_KEY, OTHER_KEY, WRONG_KEY, ADMIN_KEY, CAROL_KEY):
        assert secret not in stored
        assert secret.encode() not in on_disk
        assert secret not in answered
        assert secret not in logged
    assert UPSTREAM_KEY not in stored and UPSTREAM_KEY not in answered
