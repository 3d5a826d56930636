"""The proxied endpoints are dispatched by exact path before Litestar's router; whichever
way a call arrives, it is answered alike: refusals (keyless guard, key, method, body), an
error raised past the handler, and a bug of the gateway's (a 500 envelope, only its type
logged)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from gateway.api import proxy
from gateway.api.app import GatewayApp, create_app
from gateway.config.loader import load_config_text
from gateway.db.migrate import upgrade
from gateway.domain.errors import RateLimited, RequestTooLarge, as_gateway_error

CONFIG = """
database: {url: "sqlite+aiosqlite:///:memory:"}
auth: {keys: [{id: k, key: "sk-fast-0123456789"}]}
providers: [{id: p, adapter: echo}]
models: [{id: m, provider: p, name: echo-1, capabilities: [chat]}]
configurations: [{id: chat, mode: fixed, model: m}]
"""


async def _post(app: Any, path: str) -> tuple[int, bytes]:
    sent: list[dict[str, Any]] = []
    body = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
    messages = [{"type": "http.request", "body": body.encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        return messages.pop() if messages else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 4000),
        "headers": [(b"content-type", b"application/json")],
    }
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent[1:])


def _broken_runtime(scope: Any) -> Any:
    raise RuntimeError("a secret from the request")


@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/chat/completions/"])
async def test_a_bug_answers_a_500_envelope_on_either_route(
    path: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    app = create_app(load_config_text(CONFIG, {}))
    assert isinstance(app, GatewayApp)
    assert (path in app.fast_paths) is (not path.endswith("/"))
    monkeypatch.setattr(proxy, "_runtime", _broken_runtime)
    status, body = await _post(app, path)
    assert status == 500
    assert json.loads(body)["error"]["code"] == "internal_error"
    assert b"secret" not in body
    assert "RuntimeError" in caplog.text and "secret" not in caplog.text


async def _answer(app: Any, path: str, **request: Any) -> tuple[int, dict[str, str], bytes]:
    from litestar.testing import AsyncTestClient

    async with AsyncTestClient(app) as client:
        response = await client.request(url=path, **request)
    varying = {"date", "x-request-id", "content-length"}
    headers = {k: v for k, v in response.headers.items() if k not in varying}
    return response.status_code, headers, response.content


def _app(config: str, tmp_path: Path) -> Any:
    text = config.replace(":memory:", str(tmp_path / "g.db"))
    loaded = load_config_text(text + "server: {maxBodyBytes: 1024}\n", {})
    upgrade(loaded.database.url)
    return create_app(loaded)


def _raising(error: BaseException) -> Any:
    def runtime(scope: Any) -> Any:
        raise error

    return runtime


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("a secret from the request"),
        RateLimited("Slow down.", retry_after="7"),  # an error of the tree, with a header
        RequestTooLarge("The request body exceeds 10 bytes."),
    ],
    ids=type,
)
async def test_an_exception_past_the_handler_answers_the_same_on_both_routes(
    error: BaseException, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """What Litestar's exception handlers answer on the router's route (the trailing slash)
    the exact-path dispatch answers too: the error's own status, envelope and headers."""
    app = _app(CONFIG, tmp_path)
    monkeypatch.setattr(proxy, "_runtime", _raising(error))
    post = {"method": "POST", "content": b"{}", "headers": {"content-type": "application/json"}}
    fast = await _answer(app, "/v1/chat/completions", **post)
    routed = await _answer(app, "/v1/chat/completions/", **post)
    assert fast == routed
    expected = as_gateway_error(error)
    assert fast[0] == expected.http_status
    assert json.loads(fast[2]) == json.loads(json.dumps(expected.envelope()))
    assert b"secret" not in fast[2]


KEYLESS = CONFIG.replace(
    '{keys: [{id: k, key: "sk-fast-0123456789"}]}', "{allowUnauthenticated: true}"
)
BODY = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "hi"}]})


@pytest.mark.parametrize("config", [CONFIG, KEYLESS], ids=["keys", "keyless"])
@pytest.mark.parametrize(
    "request_",
    [
        {"method": "POST", "headers": {"content-type": "application/json"}, "content": BODY},
        {"method": "GET"},
        {"method": "PUT", "content": BODY},
        {"method": "OPTIONS"},
        {"method": "POST", "headers": {"content-type": "text/plain"}, "content": BODY},
        {"method": "POST", "headers": {"host": "rebound.example"}, "content": BODY},
        {"method": "POST", "headers": {"origin": "https://other.example"}, "content": BODY},
        {"method": "POST", "headers": {"content-type": "application/json"}, "content": "{bad"},
        {"method": "POST", "headers": {"content-type": "application/json"}, "content": "x" * 2048},
    ],
    ids=["post", "get", "put", "options", "text", "host", "origin", "bad-json", "too-large"],
)
async def test_refusals_are_the_same_on_the_exact_path_and_through_the_router(
    config: str, request_: dict[str, Any], tmp_path: Path
) -> None:
    """Keyless guard, key check, method, body size and body checks answer alike on both
    routes (the same status, envelope and headers, an x-request-id on each)."""
    app = _app(config, tmp_path)
    fast = await _answer(app, "/v1/chat/completions", **request_)
    routed = await _answer(app, "/v1/chat/completions/", **request_)
    assert fast == routed
    assert fast[0] in (400, 401, 403, 405, 413, 415, 421)
