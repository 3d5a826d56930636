"""The Responses bridge's chat call: which providers get Claude's thinking blocks back,
what it lists as ignored, and its refusals' kind."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind
from gateway.domain.model import AdapterType, Endpoint, Model, Provider
from gateway.responses import reasoning
from gateway.upstream.base import UpstreamCall
from gateway.upstream.responses_bridge import chat_call

BLOCK = {"type": "thinking", "thinking": "Hm.", "signature": "sig-Hm."}
INPUT: list[Any] = [
    {"role": "user", "content": "Find x."},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": reasoning.encode(BLOCK),
    },
    {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "x"},
]


def _call(adapter: AdapterType, model: str = "claude-sonnet", **body: Any) -> UpstreamCall:
    provider = Provider(id="p", adapter=adapter, base_url="http://127.0.0.1:1")
    request = {"model": "c", "input": INPUT, "include": ["reasoning.encrypted_content"], **body}
    return UpstreamCall(
        provider, Model(id="m", provider="p", name=model), Endpoint.RESPONSES, request, False, 10
    )


@pytest.mark.parametrize(
    ("adapter", "model", "carried"),
    [
        (AdapterType.ANTHROPIC, "claude-sonnet", True),
        (AdapterType.BEDROCK, "anthropic.claude-sonnet", True),
        (AdapterType.VERTEX, "claude-sonnet", True),
        (AdapterType.VERTEX, "gemini-2.5-pro", False),
        (AdapterType.CUSTOM, "claude-sonnet", False),
    ],
)
def test_thinking_blocks_go_back_to_providers_that_take_them(
    adapter: AdapterType, model: str, carried: bool
) -> None:
    call = _call(adapter, model)
    chat = chat_call(call)
    assert chat.endpoint is Endpoint.CHAT
    assistant = chat.body["messages"][1]
    assert (assistant.get("thinking_blocks") == [BLOCK]) is carried
    assert chat.ignored is call.ignored  # one list for both translations
    assert ("include[reasoning.encrypted_content]" in call.ignored) is not carried


def test_a_refusal_is_untranslatable_with_the_400_to_relay() -> None:
    with pytest.raises(UpstreamError) as refused:
        chat_call(_call(AdapterType.ANTHROPIC, tool_choice={"type": "web_search"}))
    assert refused.value.kind is FailureKind.UNTRANSLATABLE and refused.value.status == 400
    assert not refused.value.retryable
    assert b'"param":"tool_choice"' in refused.value.body
