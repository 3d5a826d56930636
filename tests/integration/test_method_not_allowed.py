"""A method a path does not take is answered 405 ``method_not_allowed`` on every path.

The proxied endpoints are raw ASGI handlers and the rest are Litestar's: both answer
through the one error tree (gateway/domain/errors/), so the code is the same on each
(Anthropic's Messages API answers it in Anthropic's envelope, which has no code).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

AUTH = {"authorization": f"Bearer {TEST_KEY}"}
PROXIED = {"/v1/chat/completions", "/v1/embeddings", "/v1/completions"}


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    running = RunningGateway(gateway_yaml(upstream.url, sqlite_url))
    yield running
    running.stop()


def _paths(gateway: RunningGateway) -> dict[str, set[str]]:
    """Every path the app routes, with the methods it takes (HEAD/OPTIONS aside)."""
    found: dict[str, set[str]] = {}
    for route in gateway.app.routes:
        methods = {m for m in getattr(route, "methods", set()) if m not in ("HEAD", "OPTIONS")}
        found.setdefault(route.path, set()).update(methods or {"POST"})
    return found


def test_every_path_answers_a_wrong_method_with_method_not_allowed(
    gateway: RunningGateway,
) -> None:
    paths = _paths(gateway)
    assert PROXIED | {"/v1/models", "/healthz", "/metrics", "/admin"} <= set(paths)
    wrong: dict[str, object] = {}
    for path, methods in sorted(paths.items()):
        for method in [m for m in ("PATCH", "GET", "DELETE", "PUT") if m not in methods][:2]:
            answer = httpx.request(method, f"{gateway.url}{path}", headers=AUTH, timeout=10)
            body = answer.json()
            error = body.get("error", {}) if isinstance(body, dict) else {}
            seen = (answer.status_code, error.get("code"), error.get("type"))
            if path.startswith("/v1/messages"):  # Anthropic's envelope: a type, no code
                seen = (answer.status_code, body.get("type"), error.get("type"))
                expected = (405, "error", "invalid_request_error")
            else:
                expected = (405, "method_not_allowed", "invalid_request_error")
            if seen != expected:
                wrong[f"{method} {path}"] = seen
    assert not wrong, f"not a 405 method_not_allowed: {wrong}"


def test_a_proxied_path_names_the_method_it_takes(gateway: RunningGateway) -> None:
    answer = httpx.get(f"{gateway.url}/v1/embeddings", headers=AUTH, timeout=10)
    assert answer.json()["error"]["message"] == "Use POST for /v1/embeddings."
