"""Keyless mode serves only this machine's own clients, not the web pages its browser shows."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

CHAT = {"model": "chat", "messages": [{"role": "user", "content": "Say hello."}]}
KEYS = """auth:
  adminKey: ${ADMIN_KEY}
  keys:
    - {id: alice, key: "${ALICE_KEY}"}
    - {id: bob, key: "${BOB_KEY}", configurations: [chat]}"""


def keyless_yaml(upstream: FakeUpstream, sqlite_url: str) -> str:
    yaml = gateway_yaml(upstream.url, sqlite_url)
    keyless = yaml.replace(KEYS, "auth: {allowUnauthenticated: true}")
    assert keyless != yaml
    return keyless


@pytest.fixture
def keyless(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    gateway = RunningGateway(keyless_yaml(upstream, sqlite_url))
    yield gateway
    gateway.stop()


def post(gateway: RunningGateway, **headers: str) -> httpx.Response:
    return httpx.post(f"{gateway.url}/v1/chat/completions", json=CHAT, headers=headers)


def error_code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


@pytest.mark.parametrize(
    "host", ["localhost", "localhost:4000", "127.0.0.1:1", "127.0.0.2:4000", "[::1]:8080"]
)
def test_a_loopback_host_is_served(keyless: RunningGateway, host: str) -> None:
    assert post(keyless, host=host).status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:4000", "localhost.evil.example", "10.0.0.2", ""]
)
def test_another_host_is_refused_with_421(
    keyless: RunningGateway, upstream: FakeUpstream, host: str
) -> None:
    answer = post(keyless, host=host)
    assert answer.status_code == 421
    assert error_code(answer) == "host_not_allowed"
    assert "DNS-rebinding" in answer.json()["error"]["message"]
    assert httpx.get(f"{keyless.url}/v1/models", headers={"host": host}).status_code == 421
    assert upstream.calls["small-model"] == 0


@pytest.mark.parametrize(
    "headers",
    [
        {"origin": "https://evil.example"},
        {"origin": "null"},
        {"sec-fetch-site": "cross-site"},
        {"origin": "http://localhost:3000", "sec-fetch-site": "cross-site"},
    ],
)
def test_a_cross_site_request_is_refused_with_403(
    keyless: RunningGateway, upstream: FakeUpstream, headers: dict[str, str]
) -> None:
    answer = post(keyless, **headers)
    assert answer.status_code == 403
    assert error_code(answer) == "cross_site_request"
    assert upstream.calls["small-model"] == 0


def test_a_loopback_page_and_a_navigation_are_served(keyless: RunningGateway) -> None:
    local_page = {"origin": "http://localhost:3000", "sec-fetch-site": "same-site"}
    assert post(keyless, **local_page).status_code == 200
    link = {"sec-fetch-site": "cross-site", "sec-fetch-mode": "navigate"}
    assert httpx.get(f"{keyless.url}/v1/models", headers=link).status_code == 200


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""]
)
def test_a_post_that_is_not_json_is_refused_with_415(
    keyless: RunningGateway, upstream: FakeUpstream, content_type: str
) -> None:
    answer = httpx.post(
        f"{keyless.url}/v1/chat/completions",
        content=b'{"model": "chat", "messages": [{"role": "user", "content": "hi"}]}',
        headers={"content-type": content_type},
    )
    assert answer.status_code == 415
    assert error_code(answer) == "unsupported_media_type"
    assert upstream.calls["small-model"] == 0
    charset = {"content-type": "Application/JSON; charset=utf-8"}
    assert post(keyless, **charset).status_code == 200


def test_with_keys_the_same_requests_are_served(upstream: FakeUpstream, sqlite_url: str) -> None:
    gateway = RunningGateway(gateway_yaml(upstream.url, sqlite_url))
    try:
        key = {"authorization": f"Bearer {TEST_KEY}"}
        assert post(gateway, host="gateway.example.com", **key).status_code == 200
        assert post(gateway, origin="https://app.example.com", **key).status_code == 200
    finally:
        gateway.stop()
