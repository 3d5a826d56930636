"""auth: keys become digests, exactly one of key/keyHash, references resolve."""

from __future__ import annotations

import dataclasses

import pytest

from gateway.domain.keys import hash_key

from .support import MINIMAL, load, problems_of

CONFIGS = """
configurations: [{id: chat, mode: criteria}]
"""


def auth(block: str) -> str:
    return MINIMAL + CONFIGS + "auth:\n" + block


def test_key_hash_equals_the_hash_of_the_clear_key() -> None:
    digest = hash_key("my-key")
    config = load(
        auth(
            """
  keys:
    - {id: clear, key: my-key}
  adminKey: admin
"""
        )
    )
    hashed = load(auth(f"  keys: [{{id: hashed, keyHash: 'sha256:{digest.upper()}'}}]\n"))

    assert config.auth.keys[0].key_hash == digest
    assert hashed.auth.keys[0].key_hash == digest
    assert config.auth.admin_key_hash == hash_key("admin")


def test_clear_key_is_not_kept_anywhere_in_the_config() -> None:
    config = load(auth("  keys: [{id: a, key: plain-secret-key}]\n"))

    assert "plain-secret-key" not in repr(config)
    assert "plain-secret-key" not in str(dataclasses.asdict(config))
    assert config.auth.keys[0].key_hash == hash_key("plain-secret-key")


@pytest.mark.parametrize(
    "value",
    ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "sha256:abc", "md5:00"],
)
def test_malformed_key_hash_is_an_error_without_its_value(value: str) -> None:
    problems = problems_of(auth(f"  keys: [{{id: a, keyHash: '{value}'}}]\n"))

    assert problems == ["auth.keys[0].keyHash: must be 'sha256:' followed by 64 hex digits"]


def test_key_and_key_hash_together_are_an_error() -> None:
    problems = problems_of(
        auth(f"  keys: [{{id: a, key: k, keyHash: 'sha256:{hash_key('k')}'}}]\n")
    )

    assert problems == ["auth.keys[0]: set either key or keyHash, not both"]


def test_key_without_key_or_hash_is_an_error() -> None:
    assert problems_of(auth("  keys: [{id: a}]\n")) == ["auth.keys[0]: requires key or keyHash"]


def test_duplicate_key_id_is_an_error() -> None:
    problems = problems_of(auth("  keys: [{id: a, key: one}, {id: a, key: two}]\n"))

    assert problems == ["auth.keys[1].id: duplicate key id 'a' (first at auth.keys[0])"]


def test_two_keys_with_the_same_hash_are_an_error_naming_paths_only() -> None:
    problems = problems_of(
        auth(
            "  keys: [{id: a, key: shared-secret},"
            f" {{id: b, keyHash: 'sha256:{hash_key('shared-secret')}'}}]\n"
        )
    )

    assert problems == ["auth.keys[1]: same key as auth.keys[0]"]


def test_key_configurations_must_exist() -> None:
    problems = problems_of(auth("  keys: [{id: a, key: k, configurations: [chat, nope]}]\n"))

    assert problems == [
        "auth.keys[0].configurations[1]: unknown configuration 'nope' (valid: chat)"
    ]


def test_key_restricted_to_configurations_keeps_them() -> None:
    config = load(
        auth("  keys: [{id: a, key: k, configurations: [chat], budget: {daily: {tokens: 10}}}]\n")
    )

    key = config.auth.keys[0]
    assert key.configurations == frozenset({"chat"})
    assert key.budget is not None and key.budget.daily is not None
    assert key.budget.daily.tokens == 10


def test_key_without_configurations_may_use_every_configuration() -> None:
    assert load(auth("  keys: [{id: a, key: k}]\n")).auth.keys[0].configurations is None


def test_empty_admin_key_is_an_error() -> None:
    assert problems_of(auth("  adminKey: ''\n")) == ["auth.adminKey: must not be empty"]


def test_allow_unauthenticated_is_read() -> None:
    assert load(auth("  allowUnauthenticated: true\n")).auth.allow_unauthenticated is True


def test_literal_key_with_a_wrong_type_is_not_quoted() -> None:
    problems = problems_of(auth("  keys: [{id: a, key: 123456789}]\n"))

    assert problems == ["auth.keys[0].key: expected str, got int"]
