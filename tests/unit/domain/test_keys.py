"""Key digests."""

from __future__ import annotations

import hashlib

import pytest

from gateway.domain.keys import hash_key, parse_key_hash


def test_hash_key_is_hex_sha256() -> None:
    assert hash_key("test") == hashlib.sha256(b"test").hexdigest()


def test_parse_key_hash_returns_the_lowercase_hex() -> None:
    digest = hash_key("x")

    assert parse_key_hash(f"sha256:{digest.upper()}") == digest


@pytest.mark.parametrize(
    "value", ["", "sha256:", "sha256:" + "g" * 64, "sha256:" + "a" * 63, "a" * 64]
)
def test_parse_key_hash_rejects_anything_else(value: str) -> None:
    with pytest.raises(ValueError, match="sha256"):
        parse_key_hash(value)
