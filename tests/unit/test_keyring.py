"""KeyRing: which configured key a Bearer header presents, and the admin key."""

from __future__ import annotations

import hashlib

import pytest

from gateway.auth import KeyRing
from gateway.domain.settings import ApiKey, AuthSettings

ALICE = "sk-test-alice-0001"
BOB = "sk-test-bob-0002"
ADMIN = "sk-test-admin-0003"


def _sha256(key: str) -> str:
    """The key's digest as the configuration holds it (hex SHA-256, never the key)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


RING = KeyRing(
    AuthSettings(
        admin_key_hash=_sha256(ADMIN),
        keys=(
            ApiKey(id="alice", key_hash=_sha256(ALICE)),
            ApiKey(id="bob", key_hash=_sha256(BOB), configurations=frozenset({"chat"})),
        ),
    )
)


def test_a_configured_key_is_identified_by_its_bearer_header() -> None:
    alice = RING.identify(f"Bearer {ALICE}")
    bob = RING.identify(f"Bearer {BOB}")
    assert alice is not None and alice.id == "alice" and alice.configurations is None
    assert bob is not None and bob.id == "bob" and bob.configurations == {"chat"}


@pytest.mark.parametrize(
    "header",
    [
        f"bearer {ALICE}",  # the scheme is case-insensitive
        f"BEARER   {ALICE}  ",  # and the token's surrounding spaces do not count
    ],
)
def test_the_scheme_and_spacing_are_lenient(header: str) -> None:
    found = RING.identify(header)
    assert found is not None and found.id == "alice"


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer    ",
        f"Basic {ALICE}",
        ALICE,  # no scheme
        f"Bearer {ALICE}x",
        f"Bearer {ALICE.upper()}",  # keys are case-sensitive
        f"Bearer {_sha256(ALICE)}",  # the digest is not the key
        f"Bearer {ADMIN}",  # the admin key calls no model
    ],
)
def test_anything_else_identifies_no_key(header: str | None) -> None:
    assert RING.identify(header) is None


def test_the_admin_key_is_recognised_and_no_gateway_key_is_admin() -> None:
    assert RING.is_admin(f"Bearer {ADMIN}")
    assert not RING.is_admin(f"Bearer {ALICE}")
    assert not RING.is_admin(None)
    assert not RING.is_admin(f"Basic {ADMIN}")


def test_without_an_admin_key_nobody_is_admin() -> None:
    ring = KeyRing(AuthSettings(keys=(ApiKey(id="alice", key_hash=_sha256(ALICE)),)))
    assert not ring.is_admin(f"Bearer {ADMIN}")
    assert not ring.is_admin("Bearer ")


def test_the_ring_is_open_only_when_keyless_is_allowed_and_no_key_is_configured() -> None:
    assert not RING.open
    assert KeyRing(AuthSettings(allow_unauthenticated=True)).open
    assert not KeyRing(AuthSettings()).open
    keyed = AuthSettings(keys=(ApiKey(id="alice", key_hash=_sha256(ALICE)),))
    assert not KeyRing(
        AuthSettings(keys=keyed.keys, allow_unauthenticated=True)
    ).open  # a configured key closes it
