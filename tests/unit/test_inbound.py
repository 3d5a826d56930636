"""Checks on inbound requests: what OpenAI's API accepts, the gateway accepts."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from gateway.domain.errors import InvalidRequest
from gateway.inbound import Endpoint, parse_inbound


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
