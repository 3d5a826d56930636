"""The cache key covers the configuration, the endpoint and the whole body, canonically."""

from __future__ import annotations

from gateway.cache.keys import cache_key
from gateway.inbound import Endpoint, parse_inbound


def _key(raw: bytes, configuration: str = "chat", endpoint: Endpoint = Endpoint.CHAT) -> str:
    return cache_key(configuration, parse_inbound(endpoint, raw))


BODY = b'{"model": "chat", "temperature": 0, "messages": [{"role": "user", "content": "hi"}]}'


def test_key_order_in_the_body_does_not_change_the_key() -> None:
    reordered = (
        b'{"messages": [{"content": "hi", "role": "user"}], "temperature": 0, "model": "chat"}'
    )
    assert _key(BODY) == _key(reordered)


def test_any_difference_in_the_body_changes_the_key() -> None:
    assert _key(BODY) != _key(BODY.replace(b'"temperature": 0', b'"temperature": 1'))
    assert _key(BODY) != _key(BODY.replace(b'"hi"', b'"hi!"'))


def test_the_configuration_is_part_of_the_key() -> None:
    assert _key(BODY, "chat") != _key(BODY, "other")


def test_the_key_is_a_hex_sha256() -> None:
    key = _key(BODY)
    assert len(key) == 64 and int(key, 16) >= 0
