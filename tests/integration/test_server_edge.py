"""The server's edge against anyone, keyless: heads, bodies, connections, JSON depth.

Raw sockets against the real server on loopback, served as ``gateway serve`` serves it.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

HEAD = b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"


def serve(upstream: FakeUpstream, sqlite_url: str, server: str) -> RunningGateway:
    yaml = gateway_yaml(upstream.url, sqlite_url)
    edited = yaml.replace("server: {requestTimeoutSeconds: 20}", f"server: {{{server}}}")
    assert edited != yaml
    return RunningGateway(edited)


@pytest.fixture
def gateway(
    request: pytest.FixtureRequest, upstream: FakeUpstream, sqlite_url: str
) -> Iterator[RunningGateway]:
    running = serve(upstream, sqlite_url, getattr(request, "param", ""))
    yield running
    running.stop()


def connect(gateway: RunningGateway, timeout: float = 5.0) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", gateway.server.port), timeout=timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes; a socket timeout fails the test."""
    parts = []
    while True:
        try:
            part = sock.recv(65536)
        except ConnectionResetError:
            break
        if not part:
            break
        parts.append(part)
    return b"".join(parts)


def received(sock: socket.socket) -> bytes:
    part = sock.recv(65536)
    if not part:
        raise AssertionError("the server closed the connection mid-answer")
    return part


def read_answer(sock: socket.socket) -> bytes:
    """One whole answer (its head and a ``content-length`` body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += received(sock)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.lower().split(b"\r\n")
        if line.startswith(b"content-length:")
    )
    while len(body) < length:
        body += received(sock)
    return head + b"\r\n\r\n" + body


def envelope_of(answer: bytes) -> dict[str, object]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert b"content-type: application/json" in head.lower(), head
    error: dict[str, object] = json.loads(body)["error"]
    return error


def rss_bytes() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_an_endless_request_head_is_answered_431_before_it_is_buffered(
    gateway: RunningGateway,
) -> None:
    chunk = b"a" * 65536
    sockets = [connect(gateway) for _ in range(4)]
    answers: dict[int, bytes] = {}
    before = rss_bytes()
    try:
        for sock in sockets:
            sock.sendall(HEAD + b"x-endless: ")
        for _ in range(32 * 16):  # up to 32 MiB of one header per connection
            for i, sock in enumerate(sockets):
                if i in answers:
                    continue
                readable, _, _ = select.select([sock], [], [], 0)
                try:
                    if not readable:
                        sock.sendall(chunk)
                        continue
                except (BrokenPipeError, ConnectionResetError):
                    pass
                answers[i] = sock.recv(65536)
            if len(answers) == len(sockets):
                break
        grown = rss_bytes() - before  # while every connection is still open
    finally:
        for sock in sockets:
            sock.close()
    assert len(answers) == 4, "a connection was never answered"
    for answer in answers.values():
        assert answer.startswith(b"HTTP/1.1 431 "), answer[:200]
        assert b"connection: close" in answer.lower()
        assert envelope_of(answer)["code"] == "request_header_too_large"
    assert grown < 24 * 1024 * 1024, grown  # unbounded: 4 x 32 MiB held by the parser


def test_a_head_within_the_cap_is_served(gateway: RunningGateway) -> None:
    with connect(gateway) as sock:
        padding = b"x-padding: " + b"p" * 60_000 + b"\r\n"
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + padding + b"\r\n")
        answer = read_answer(sock)
    assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]


@pytest.mark.parametrize("gateway", ["headerTimeoutSeconds: 1"], indirect=True)
def test_a_connection_that_never_sends_is_closed_after_the_header_timeout(
    gateway: RunningGateway,
) -> None:
    with connect(gateway, timeout=4) as sock:
        assert read_until_closed(sock) == b""


@pytest.mark.parametrize("gateway", ["headerTimeoutSeconds: 1"], indirect=True)
def test_a_head_sent_byte_by_byte_gets_408_at_the_deadline(gateway: RunningGateway) -> None:
    started = time.monotonic()
    with connect(gateway, timeout=4) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")
        answer = b""
        for _ in range(40):  # a header byte every 0.1 s: each read is quick, the head never ends
            if select.select([sock], [], [], 0.1)[0]:
                answer = read_until_closed(sock)
                break
            sock.sendall(b"x")
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
    assert envelope_of(answer)["code"] == "request_timeout"
    assert time.monotonic() - started < 3.5


@pytest.mark.parametrize("gateway", ["idleTimeoutSeconds: 1"], indirect=True)
def test_an_idle_keep_alive_connection_is_closed(gateway: RunningGateway) -> None:
    with connect(gateway, timeout=3) as sock:  # under uvicorn's own 5 s keep-alive
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
        assert read_until_closed(sock) == b""


@pytest.mark.parametrize("gateway", ["idleTimeoutSeconds: 1"], indirect=True)
def test_a_body_that_stalls_is_closed_after_the_idle_timeout(gateway: RunningGateway) -> None:
    with connect(gateway, timeout=4) as sock:
        sock.sendall(
            HEAD
            + f"authorization: Bearer {TEST_KEY}\r\ncontent-type: application/json\r\n"
            "content-length: 100\r\n\r\n".encode()
        )
        time.sleep(0.2)
        sock.sendall(b'{"model": "chat"')
        assert read_until_closed(sock) == b""


@pytest.mark.parametrize("gateway", ["maxConnections: 2"], indirect=True)
def test_a_connection_over_max_connections_is_answered_503(gateway: RunningGateway) -> None:
    get = b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    held = [connect(gateway), connect(gateway)]
    try:
        for sock in held:  # answered, and kept open
            sock.sendall(get)
            assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
        with connect(gateway) as third:
            third.sendall(get)
            answer = read_until_closed(third)
        assert answer.startswith(b"HTTP/1.1 503 "), answer[:200]
        assert b"retry-after: 1" in answer.lower()
        assert envelope_of(answer)["code"] == "server_busy"
        held.pop().close()
        for _ in range(100):  # a freed slot serves again
            with connect(gateway) as fourth:
                fourth.sendall(get)
                if fourth.recv(65536).startswith(b"HTTP/1.1 200 "):
                    break
            time.sleep(0.02)
        else:
            raise AssertionError("the freed slot was never reused")
    finally:
        for sock in held:
            sock.close()


@pytest.mark.parametrize("gateway", ["maxBodyBytes: 1024"], indirect=True)
def test_a_client_that_sends_its_whole_body_first_reads_the_413(
    gateway: RunningGateway,
) -> None:
    body = json.dumps(
        {"model": "chat", "messages": [{"role": "user", "content": "x" * 12_000_000}]}
    ).encode()
    request = urllib.request.Request(
        f"{gateway.url}/v1/chat/completions",
        data=body,
        headers={"authorization": f"Bearer {TEST_KEY}", "content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=10)
    assert caught.value.code == 413
    assert caught.value.headers["connection"] == "close"
    assert json.loads(caught.value.read())["error"]["code"] == "request_too_large"


# Past the default maxBodyBytes (16 MiB) by more than 16 MiB: the lingering close once
# stopped discarding after 16 MiB and reset the connection before the client read the 413.
OVERSIZED_CONTENT = "x" * 36_000_000
OVERSIZED_MESSAGE = "The request body exceeds 16777216 bytes."


def test_urllib_sending_36_mb_whole_reads_the_413_and_its_message(
    gateway: RunningGateway,
) -> None:
    body = {"model": "chat", "messages": [{"role": "user", "content": OVERSIZED_CONTENT}]}
    request = urllib.request.Request(
        f"{gateway.url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"authorization": f"Bearer {TEST_KEY}", "content-type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request, timeout=30)
    assert caught.value.code == 413
    error = json.loads(caught.value.read())["error"]
    assert error["code"] == "request_too_large"
    assert error["message"] == OVERSIZED_MESSAGE


def test_the_openai_sdk_sending_36_mb_reads_the_413_and_its_message(
    gateway: RunningGateway,
) -> None:
    client = gateway.client(timeout=30)
    with pytest.raises(openai.APIStatusError) as caught:
        client.chat.completions.create(
            model="chat", messages=[{"role": "user", "content": OVERSIZED_CONTENT}]
        )
    assert caught.value.status_code == 413
    assert caught.value.code == "request_too_large"
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["message"] == OVERSIZED_MESSAGE


@pytest.mark.parametrize("depth", [129, 1_000, 100_000])
def test_json_nested_too_deep_is_invalid_json(gateway: RunningGateway, depth: int) -> None:
    nested = b"[" * (depth - 1) + b"]" * (depth - 1)  # inside the body's own object
    body = b'{"model": "chat", "messages": [{"role": "user", "content": "hi"}], "x": ' + nested
    answer = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=body + b"}",
        headers={"authorization": f"Bearer {TEST_KEY}", "content-type": "application/json"},
    )
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == "invalid_json"


def test_json_nested_to_the_limit_is_forwarded(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    nested = b"{}"
    for _ in range(125):  # 126 objects, in a list, in the body's object: 128 levels
        nested = b'{"a": ' + nested + b"}"
    body = b'{"model": "chat", "messages": [{"role": "user", "content": "hi"}], "x": [' + nested
    answer = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=body + b"]}",
        headers={"authorization": f"Bearer {TEST_KEY}", "content-type": "application/json"},
    )
    assert answer.status_code == 200, answer.text
    assert upstream.calls["small-model"] == 1


def test_every_answer_forbids_content_sniffing(gateway: RunningGateway) -> None:
    key = {"authorization": f"Bearer {TEST_KEY}"}
    chat = {"model": "chat", "messages": [{"role": "user", "content": "hi"}]}
    answers = [
        httpx.get(f"{gateway.url}/healthz"),
        httpx.get(f"{gateway.url}/v1/models", headers=key),
        httpx.get(f"{gateway.url}/nowhere"),
        httpx.post(f"{gateway.url}/v1/chat/completions", json=chat, headers=key),
        httpx.post(f"{gateway.url}/v1/chat/completions", json=chat),  # 401
        httpx.post(
            f"{gateway.url}/v1/chat/completions", json={**chat, "stream": True}, headers=key
        ),
    ]
    assert [a.status_code for a in answers] == [200, 200, 404, 200, 401, 200]
    assert all(a.headers["x-content-type-options"] == "nosniff" for a in answers)


def test_every_models_list_answer_carries_a_request_id_errors_included(
    gateway: RunningGateway,
) -> None:
    """As on the proxied paths: the caller's well-formed x-request-id echoed, else a fresh
    one (32 hex digits), on the list, its trailing-slash twin, and its 401 and 405."""
    key = {"authorization": f"Bearer {TEST_KEY}"}
    url = f"{gateway.url}/v1/models"
    mine = {"x-request-id": "list-42"}
    echoed = [
        httpx.get(url, headers={**key, **mine}),
        httpx.get(f"{url}/", headers={**key, **mine}),
        httpx.get(url, headers={"authorization": "Bearer sk-nope", **mine}),
        httpx.post(url, headers={**key, **mine}),
    ]
    assert [a.status_code for a in echoed] == [200, 200, 401, 405]
    assert [a.headers.get("x-request-id") for a in echoed] == ["list-42"] * 4
    made = [
        httpx.get(url, headers=key),
        httpx.get(url, headers={**key, "x-request-id": "x" * 129}),  # too long: replaced
        httpx.get(url, headers={"authorization": "Bearer sk-nope"}),
    ]
    ids = [a.headers.get("x-request-id") or "" for a in made]
    assert all(len(i) == 32 and int(i, 16) >= 0 for i in ids), ids
    assert len(set(ids)) == 3
    # The OpenAI SDK reads it off its errors as off any other answer.
    sdk = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="sk-nope", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as refused:
        sdk.models.list(extra_headers=mine)
    assert refused.value.request_id == "list-42"
    listed = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key=TEST_KEY)
    raw = listed.models.with_raw_response.list(extra_headers=mine)
    assert raw.headers["x-request-id"] == "list-42" and raw.parse().data


@pytest.mark.parametrize("gateway", ["headerTimeoutSeconds: 1"], indirect=True)
@pytest.mark.parametrize("late", [b"GET /healthz HTTP/1.1\r\n", b"\r\n"])
def test_a_late_pipelined_head_does_not_cut_the_answer_in_flight(
    gateway: RunningGateway, upstream: FakeUpstream, late: bytes
) -> None:
    upstream.behave("small-model", latency_ms=2500)
    body = json.dumps({"model": "chat", "messages": [{"role": "user", "content": "hi"}]})
    request = (
        HEAD
        + f"authorization: Bearer {TEST_KEY}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n{body}".encode()
    )
    with connect(gateway, timeout=8) as sock:
        sock.sendall(request)
        time.sleep(0.2)
        sock.sendall(late)  # the start of a next head that never ends
        answer = read_answer(sock)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        assert json.loads(answer.partition(b"\r\n\r\n")[2])["choices"]
        assert read_until_closed(sock) == b""  # then the connection ends, with no 408


def test_a_malformed_request_gets_a_400_envelope(gateway: RunningGateway) -> None:
    with connect(gateway) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nno colon here\r\n\r\n")
        answer = read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 400 "), answer[:200]
    assert envelope_of(answer)["code"] == "invalid_request"


def test_an_upgrade_header_is_ignored_without_a_warning(
    gateway: RunningGateway, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    with connect(gateway) as sock:
        sock.sendall(
            b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\n"
            b"Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"
            b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
        assert read_answer(sock).startswith(b"HTTP/1.1 200 ")
    assert not [r for r in caplog.records if r.name.startswith("uvicorn")]
