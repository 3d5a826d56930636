"""The proxied endpoints are dispatched by exact path before Litestar's router; whichever
way a call arrives, a bug of the gateway's answers a 500 envelope and logs only its type."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.api import proxy
from gateway.api.app import GatewayApp, create_app
from gateway.config.loader import load_config_text

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
