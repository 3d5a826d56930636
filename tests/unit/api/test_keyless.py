"""Keyless mode's refusals, decided from the request line and headers alone."""

from __future__ import annotations

import pytest

from gateway.api.keyless import is_loopback_host, is_loopback_origin, keyless_refusal


@pytest.mark.parametrize(
    "host",
    [
        b"localhost",
        b"LOCALHOST:4000",
        b"127.0.0.1",
        b"127.0.0.1:65535",
        b"127.0.0.2:4000",  # all of 127.0.0.0/8 is loopback (`gateway serve --host 127.0.0.2`)
        b"[::1]",
        b"[::1]:80",
        b"[0:0:0:0:0:0:0:1]",
    ],
)
def test_loopback_hosts(host: bytes) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize(
    "host",
    [
        b"",
        b"localhost:",
        b"localhost:x",
        b"[::1",
        b"[::1]x",
        b"::1",
        b"127.0.0.1.nip.io",
        b"0",
        b"127.1",
        b"128.0.0.1",
        b"[::2]",
    ],
)
def test_other_hosts(host: bytes) -> None:
    assert not is_loopback_host(host)


def test_loopback_origins_need_a_web_scheme() -> None:
    assert is_loopback_origin(b"http://localhost:3000")
    assert is_loopback_origin(b"https://[::1]")
    assert not is_loopback_origin(b"null")
    assert not is_loopback_origin(b"file://localhost")
    assert not is_loopback_origin(b"http://evil.example")


def test_the_first_host_header_decides() -> None:
    headers = [(b"host", b"evil.example"), (b"host", b"localhost")]
    refusal = keyless_refusal("GET", headers)
    assert refusal is not None and refusal.http_status == 421


def test_a_get_needs_no_content_type() -> None:
    assert keyless_refusal("GET", [(b"host", b"localhost")]) is None
