"""Console session tokens: signed, expiring, bound to the admin key; CSRF tokens; Origin."""

from __future__ import annotations

import pytest

from gateway.domain.keys import hash_key
from gateway.session import SessionSigner, same_origin

ADMIN = hash_key("sk-admin-one")


def test_a_token_verifies_until_it_expires_and_holds_no_key() -> None:
    signer = SessionSigner(ADMIN, 3600)
    token = signer.issue(1000.0, "abc123")
    assert "sk-admin" not in token and ADMIN not in token
    session = signer.verify(token, 1000.0 + 3599)
    assert session is not None and session.nonce == "abc123" and session.expires == 4600
    assert signer.verify(token, 4600.0) is None


@pytest.mark.parametrize(
    "tamper",
    [
        lambda t: t.replace("4600", "9600", 1),  # a later expiry
        lambda t: t[:-1] + ("0" if t[-1] != "0" else "1"),  # another signature
        lambda t: t.replace("abc123", "abc124"),
        lambda t: t + ".x",
        lambda t: "",
    ],
)
def test_a_changed_token_is_refused(tamper: object) -> None:
    signer = SessionSigner(ADMIN, 3600)
    token = signer.issue(1000.0, "abc123")
    assert callable(tamper)
    assert signer.verify(tamper(token), 1001.0) is None


def test_another_admin_key_ends_every_session() -> None:
    token = SessionSigner(ADMIN, 3600).issue(1000.0, "abc123")
    assert SessionSigner(hash_key("sk-admin-two"), 3600).verify(token, 1001.0) is None
    assert SessionSigner(ADMIN, 60).verify(token, 1001.0) is not None  # lifetime is signed in


def test_csrf_tokens_are_bound_to_their_seed() -> None:
    signer = SessionSigner(ADMIN, 3600)
    token = signer.csrf_token("session:abc")
    assert signer.csrf_valid("session:abc", token)
    assert not signer.csrf_valid("session:abd", token)
    assert not signer.csrf_valid(None, token) and not signer.csrf_valid("session:abc", None)


def test_same_origin_compares_scheme_and_host() -> None:
    assert same_origin("http://127.0.0.1:4000", "127.0.0.1:4000", "http")
    assert same_origin("HTTPS://Console.Example", "console.example", "https")
    assert not same_origin("http://console.example", "console.example", "https")
    assert not same_origin("null", "127.0.0.1:4000", "http")
    assert not same_origin(None, "127.0.0.1:4000", "http")
    assert not same_origin("http://evil.example", "127.0.0.1:4000", "http")
