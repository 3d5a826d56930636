"""The one redaction rule: the provider's key replaced by ``[redacted]``."""

from __future__ import annotations

from gateway.upstream.redaction import (
    REDACTED,
    key_spellings,
    redact_key,
    redact_key_bytes,
    redact_optional,
)


def test_the_key_is_replaced_wherever_it_shows_and_nothing_else_changes() -> None:
    assert REDACTED == "[redacted]"
    assert redact_key("a sk-1 b sk-1", "sk-1") == "a [redacted] b [redacted]"
    assert redact_key("masked sk-****1 stays", "sk-1") == "masked sk-****1 stays"
    assert redact_key("any", None) == "any" and redact_optional(None, "sk-1") is None


def test_bytes_are_returned_as_they_are_when_the_key_is_absent() -> None:
    data = b'{"model": "gpt"}'
    assert redact_key_bytes(data, "sk-1") is data
    assert redact_key_bytes(data, None) is data


def test_a_slash_in_the_key_is_also_looked_for_escaped() -> None:
    assert key_spellings("sk-a/b") == (b"sk-a/b", b"sk-a\\/b")
    assert key_spellings("sk-ab") == (b"sk-ab",)
    data = b'{"a": "sk-a/b", "b": "sk-a\\/b"}'
    assert redact_key_bytes(data, "sk-a/b") == b'{"a": "[redacted]", "b": "[redacted]"}'
