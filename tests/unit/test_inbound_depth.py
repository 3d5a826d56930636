"""Inbound bodies: how deep JSON may nest before it is refused as invalid."""

from __future__ import annotations

import pytest

from gateway.domain.errors import InvalidJson
from gateway.domain.model import Endpoint
from gateway.inbound import MAX_JSON_DEPTH, nests_deeper, parse_inbound


def nested(depth: int, opener: str = "[", closer: str = "]") -> str:
    return opener * depth + closer * depth


def body_with(value: str) -> bytes:
    return f'{{"model": "c", "messages": [{{"role": "user"}}], "x": {value}}}'.encode()


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        ([], 1),
        ({"a": 1, "b": "s", "c": None}, 1),
        ([1, [2, [3]]], 3),
        ({"a": [{"b": {}}]}, 4),
        ([[1] * 1000, {"k": [[[]]]}], 5),
    ],
)
def test_depth_counts_the_value_itself_as_level_one(value: object, depth: int) -> None:
    assert not nests_deeper(value, depth)
    assert nests_deeper(value, depth - 1)


def test_a_body_at_the_limit_parses() -> None:
    inner = nested(MAX_JSON_DEPTH - 1)  # inside the body's own object
    assert parse_inbound(Endpoint.CHAT, body_with(inner)).configuration == "c"


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 5_000, 200_000])
def test_a_deeper_body_is_invalid_json(depth: int) -> None:
    with pytest.raises(InvalidJson, match="nests deeper than 128 levels"):
        parse_inbound(Endpoint.CHAT, body_with(nested(depth - 1)))


def test_objects_count_like_arrays() -> None:
    inner = '{"a": ' * MAX_JSON_DEPTH + "1" + "}" * MAX_JSON_DEPTH
    with pytest.raises(InvalidJson):
        parse_inbound(Endpoint.CHAT, body_with(inner))


@pytest.mark.parametrize("raw", [b"5", b'"text"', b"null", b"[1]"])
def test_a_body_that_is_not_an_object_is_still_refused_as_such(raw: bytes) -> None:
    with pytest.raises(InvalidJson, match="must be a JSON object"):
        parse_inbound(Endpoint.CHAT, raw)
