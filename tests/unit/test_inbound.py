"""Checks on inbound requests: what OpenAI's API accepts, the gateway accepts, and the fields
a budget hold multiplies are integers in a sane range, or null."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gateway.domain.errors import InvalidRequest
from gateway.domain.model import Endpoint
from gateway.inbound import MAX_CHOICES, MAX_TOKENS_BOUND, InboundRequest, parse_inbound


def _parse(endpoint: Endpoint, body: dict[str, Any]) -> Any:
    return parse_inbound(endpoint, msgspec.json.encode(body))


@pytest.mark.parametrize("prompt", [None, "Say this", ["a", "b"], [1, 2], [[1, 2]]])
def test_completions_accept_every_prompt_openai_accepts_null_included(prompt: Any) -> None:
    request = _parse(Endpoint.COMPLETIONS, {"model": "complete", "prompt": prompt})
    assert request.body["prompt"] == prompt  # forwarded as sent


@pytest.mark.parametrize("body", [{"model": "complete"}, {"model": "complete", "prompt": 7}])
def test_completions_refuse_a_missing_or_mistyped_prompt(body: dict[str, Any]) -> None:
    with pytest.raises(InvalidRequest) as info:
        _parse(Endpoint.COMPLETIONS, body)
    assert info.value.param == "prompt"


MESSAGES = [{"role": "user", "content": "hi"}]


def _chat(**fields: Any) -> InboundRequest:
    body = {"model": "chat", "messages": MESSAGES, **fields}
    return parse_inbound(Endpoint.CHAT, msgspec.json.encode(body))


def _completion(**fields: Any) -> InboundRequest:
    body = {"model": "complete", "prompt": "hi", **fields}
    return parse_inbound(Endpoint.COMPLETIONS, msgspec.json.encode(body))


@pytest.mark.parametrize("name", ["max_tokens", "max_completion_tokens", "n"])
@pytest.mark.parametrize(
    "value", [0, -1, 100_000_000_000_000, 2**31, 1.5, 10.0, "10", True, [3], {"v": 1}]
)
def test_a_bound_that_is_not_an_integer_in_range_is_a_400_naming_it(name: str, value: Any) -> None:
    if name == "n" and value == 2**31:
        value = MAX_CHOICES + 1
    with pytest.raises(InvalidRequest) as caught:
        _chat(**{name: value})
    assert caught.value.param == name
    assert caught.value.code == "invalid_request"
    assert caught.value.http_status == 400


def test_the_bounds_themselves_are_accepted() -> None:
    request = _chat(max_tokens=MAX_TOKENS_BOUND, max_completion_tokens=1, n=MAX_CHOICES)
    assert request.max_tokens == 1
    assert request.count_of("n") == MAX_CHOICES


def test_completions_bound_best_of_too() -> None:
    with pytest.raises(InvalidRequest) as caught:
        _completion(best_of=MAX_CHOICES + 1)
    assert caught.value.param == "best_of"
    assert _completion(best_of=3).count_of("best_of") == 3


def test_completions_accept_max_tokens_0_as_openai_does_and_keep_the_other_bounds() -> None:
    assert _completion(max_tokens=0, echo=True, logprobs=1).max_tokens == 0
    assert _completion(max_tokens=MAX_TOKENS_BOUND).max_tokens == MAX_TOKENS_BOUND
    for value in (-1, MAX_TOKENS_BOUND + 1, 1.5, True):
        with pytest.raises(InvalidRequest) as caught:
            _completion(max_tokens=value)
        assert caught.value.param == "max_tokens"
        assert "from 0 to 2147483647" in caught.value.message
    for name in ("n", "best_of"):
        with pytest.raises(InvalidRequest) as caught:
            _completion(**{name: 0})
        assert caught.value.param == name
    with pytest.raises(InvalidRequest):  # chat keeps its minimum of 1
        _chat(max_tokens=0)


def test_null_means_absent() -> None:
    request = _chat(max_tokens=None, max_completion_tokens=None, n=None)
    assert request.max_tokens is None
    assert request.count_of("n") == 1


def test_a_null_max_completion_tokens_does_not_hide_max_tokens() -> None:
    assert _chat(max_completion_tokens=None, max_tokens=100_000).max_tokens == 100_000
    assert _chat(max_tokens=None, max_completion_tokens=70).max_tokens == 70
    assert _chat(max_tokens=50, max_completion_tokens=70).max_tokens == 70


def test_embeddings_are_not_checked_for_generation_bounds() -> None:
    body = {"model": "embed", "input": "x", "max_tokens": 0}
    assert parse_inbound(Endpoint.EMBEDDINGS, msgspec.json.encode(body)).max_tokens == 0


def test_responses_have_their_own_operations_and_need_what_their_content_needs() -> None:
    from gateway.domain.model import Capability, Operation

    image = {"type": "input_image", "image_url": "https://x/y.png"}
    plain = _parse(Endpoint.RESPONSES, {"model": "m", "input": "Hi", "max_output_tokens": 9})
    assert (plain.operation, plain.required) == (Operation.RESPONSES, {Capability.CHAT})
    assert plain.max_tokens == 9
    assert plain.endpoint is Endpoint.RESPONSES  # counted as /v1/responses
    rich = _parse(
        Endpoint.RESPONSES,
        {
            "model": "m",
            "stream": True,
            "tools": [{"type": "function", "name": "f"}],
            "input": [{"role": "user", "content": [image]}],
            "max_tokens": 5,  # chat's name: not a Responses bound
        },
    )
    assert rich.operation is Operation.RESPONSES_STREAM
    assert rich.required == {Capability.CHAT, Capability.TOOLS, Capability.VISION}
    assert rich.max_tokens is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"input": 3}, "input"),
        ({"input": ["a string item"]}, "input"),
        ({"input": "x", "instructions": ["x"]}, "instructions"),
        ({"input": "x", "tools": {}}, "tools"),
        ({"input": "x", "max_output_tokens": 0}, "max_output_tokens"),
        ({"input": "x", "max_output_tokens": MAX_TOKENS_BOUND + 1}, "max_output_tokens"),
    ],
)
def test_responses_refuse_what_the_gateway_reads_when_mistyped(
    body: dict[str, Any], param: str
) -> None:
    with pytest.raises(InvalidRequest) as info:
        _parse(Endpoint.RESPONSES, {"model": "m", **body})
    assert info.value.param == param


def test_every_operation_fits_the_telemetry_column() -> None:
    from gateway.db.tables import OPERATION_LEN
    from gateway.domain.model import Operation

    assert max(len(operation.value) for operation in Operation) <= OPERATION_LEN
