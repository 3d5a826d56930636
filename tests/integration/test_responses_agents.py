"""What coding agents and reasoning-model clients send on the Responses API, through the
real server with the openai SDK, native and translated: a coding agent's request
(``include: ["reasoning.encrypted_content"]``, ``store: false``, ``client_metadata``,
function tools in a ``namespace`` tool, an offered ``web_search``, ``text.verbosity``,
``reasoning`` with a summary) to a strict OpenAI-compatible chat upstream and to
Anthropic; a two-turn tool loop whose encrypted reasoning goes back to Anthropic as its
signed thinking block; configurations named like reasoning models (``o4-mini``,
``gpt-5``) with what the SDK and agents send for such names."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest

from gateway.responses import reasoning
from tests.support.fake_shapes import signature_of, unknown_chat_fields
from tests.support.fake_upstream import FakeUpstream, Received
from tests.support.gateway import RunningGateway, anthropic_provider, gateway_yaml, running_gateway
from tests.support.openai_schema import assert_valid

NAMESPACE: dict[str, Any] = {
    "type": "namespace",
    "name": "repo",
    "description": "Tools on the checked-out repository.",
    "tools": [
        {
            "type": "function",
            "name": "lookup",
            "description": "Look a symbol up.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "required": ["q"],
                "additionalProperties": False,
            },
            "strict": False,
        }
    ],
}
# The shape of a Responses-based coding agent's request (as captured from one): its
# own fields beside the SDK's, function tools grouped in a namespace, web search offered.
AGENT: dict[str, Any] = {
    "instructions": "You are a coding agent.",
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Find x."}]}
    ],
    "tools": [NAMESPACE, {"type": "web_search", "external_web_access": False}],
    "tool_choice": "auto",
    "parallel_tool_calls": False,
    "reasoning": {"effort": "medium", "summary": "auto"},
    "store": False,
    "include": ["reasoning.encrypted_content"],
    "prompt_cache_key": "session-1",
    "text": {"verbosity": "low"},
}
CLIENT_METADATA = {"session_id": "session-1", "originator": "agent"}
TRANSLATED_IGNORED = (
    "tools[web_search],text.verbosity,client_metadata,"
    "include[reasoning.encrypted_content],reasoning.summary"
)
CLAUDE_IGNORED = "tools[web_search],text.verbosity,client_metadata"


@pytest.fixture
def gateway(upstream: FakeUpstream, sqlite_url: str) -> Iterator[RunningGateway]:
    yaml_text = gateway_yaml(
        upstream.url,
        sqlite_url,
        providers=f"""
  - {{id: compat, adapter: custom, baseUrl: "{upstream.url}/v1", maxRetries: 0}}
"""
        + anthropic_provider(upstream.url, "maxRetries: 0"),
        models="""
  - {id: compat-model, provider: compat, name: compat-small, capabilities: [chat, tools],
     price: {input: 0.50, output: 1.50}}
  - {id: sonnet, provider: claude, name: claude-sonnet, capabilities: [chat, tools],
     maxOutputTokens: 16000, price: {input: 3.00, output: 15.00}}""",
        configurations="""
  - {id: gpt-5, mode: fixed, model: compat-model}
  - {id: o4-mini, mode: fixed, model: sonnet}""",
    )
    with running_gateway(yaml_text) as running:
        yield running


def _sent(upstream: FakeUpstream, path: str) -> list[Received]:
    return [r for r in upstream.received if r.path == path]


def _agent_call(gateway: RunningGateway, model: str, stream: bool) -> tuple[Any, dict[str, str]]:
    """The coding agent's request with the openai SDK: its answer and headers."""
    client = gateway.client()
    extra = {"extra_body": {"client_metadata": CLIENT_METADATA}}
    if not stream:
        raw = client.responses.with_raw_response.create(model=model, **AGENT, **extra)
        return raw.parse(), dict(raw.headers)
    with client.responses.with_streaming_response.create(
        model=model, stream=True, **AGENT, **extra
    ) as response:
        final = [e.response for e in response.parse() if e.type == "response.completed"]
        return final[0], dict(response.headers)


@pytest.mark.parametrize("stream", [False, True])
def test_a_coding_agents_request_through_a_strict_chat_upstream(
    gateway: RunningGateway, upstream: FakeUpstream, stream: bool
) -> None:
    upstream.behave(
        "compat-small", tool_call=True, tool_name="repo__lookup", known_fields_only=True
    )
    answer, headers = _agent_call(gateway, "gpt-5", stream)
    (call,) = [item for item in answer.output if item.type == "function_call"]
    assert (call.name, call.namespace, call.arguments) == ("lookup", "repo", '{"q": "x"}')
    assert headers["x-gateway-ignored-params"] == TRANSLATED_IGNORED
    for sent in _sent(upstream, "/v1/chat/completions"):
        body = sent.body
        assert unknown_chat_fields(body) == []  # nothing a strict upstream refuses
        assert "verbosity" not in body and "store" not in body
        assert [t["function"]["name"] for t in body["tools"]] == ["repo__lookup"]
        assert body["reasoning_effort"] == "medium"
    (row,) = gateway.rows(expect=1)
    assert row["ignored_params"] == TRANSLATED_IGNORED and row["success"]


def test_the_same_request_goes_natively_as_it_was_sent(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    raw = gateway.client().responses.with_raw_response.create(
        model="chat", **AGENT, extra_body={"client_metadata": CLIENT_METADATA}
    )
    assert raw.parse().output_text
    assert "x-gateway-ignored-params" not in raw.headers
    (sent,) = _sent(upstream, "/v1/responses")
    assert sent.body["tools"] == AGENT["tools"] and sent.body["client_metadata"] == CLIENT_METADATA
    assert sent.body["include"] == ["reasoning.encrypted_content"]
    (row,) = gateway.rows(expect=1)
    assert row["ignored_params"] is None


def _assert_thinking_sent(body: dict[str, Any]) -> None:
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 8000}
    assert [t["name"] for t in body["tools"]] == ["repo__lookup"]
    assert "verbosity" not in body and "client_metadata" not in body


@pytest.mark.parametrize("stream", [False, True])
def test_a_coding_agents_tool_loop_keeps_its_reasoning_through_anthropic(
    gateway: RunningGateway, upstream: FakeUpstream, stream: bool
) -> None:
    """Turn one: thinking, then a call; its reasoning item carries the signed block. Turn
    two sends the items back: Anthropic gets the block first in the assistant turn (the
    fake refuses a tool loop without it, or a signature that is not its own)."""
    upstream.behave(
        "claude-sonnet",
        tool_call=True,
        tool_call_until_result=True,
        tool_name="repo__lookup",
        thinking="x is a symbol; look it up.",
        content="x is defined in a.py.",
    )
    first, headers = _agent_call(gateway, "o4-mini", stream)
    assert headers["x-gateway-ignored-params"] == CLAUDE_IGNORED
    thought, call = first.output
    assert thought.type == "reasoning" and call.type == "function_call"
    assert thought.summary[0].text == "x is a symbol; look it up."
    block = reasoning.decode(thought.encrypted_content)
    assert block == {
        "type": "thinking",
        "thinking": "x is a symbol; look it up.",
        "signature": signature_of("x is a symbol; look it up."),
    }
    assert (call.name, call.namespace) == ("lookup", "repo")
    _assert_thinking_sent(_sent(upstream, "/anthropic/v1/messages")[-1].body)

    history = [
        *AGENT["input"],
        *[item.model_dump(exclude_none=True) for item in first.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": "a.py:1"},
    ]
    second = gateway.client().responses.create(
        model="o4-mini",
        **{**AGENT, "input": history},
        extra_body={"client_metadata": CLIENT_METADATA},
    )
    assert second.output_text == "x is defined in a.py."
    body = _sent(upstream, "/anthropic/v1/messages")[-1].body
    _assert_thinking_sent(body)
    assistant = body["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == block  # the signed block, first, as it came
    assert assistant["content"][1]["type"] == "tool_use"
    assert assistant["content"][1]["name"] == "repo__lookup"
    rows = gateway.rows(expect=2)
    assert all(r["success"] and r["ignored_params"] == CLAUDE_IGNORED for r in rows)


def test_a_tool_loop_without_the_encrypted_reasoning_turns_thinking_off_and_lists_it(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """A client that keeps no reasoning (no include) cannot send the block back: the next
    turn goes without thinking, which Anthropic would otherwise refuse."""
    upstream.behave(
        "claude-sonnet", tool_call=True, tool_call_until_result=True, tool_name="repo__lookup"
    )
    client = gateway.client()
    asked: dict[str, Any] = {"tools": [NAMESPACE], "reasoning": {"effort": "low"}}
    first = client.responses.create(model="o4-mini", input="Find x.", **asked)
    (thought, call) = first.output
    assert thought.type == "reasoning" and thought.encrypted_content is None
    history = [
        {"role": "user", "content": "Find x."},
        *[item.model_dump(exclude_none=True) for item in first.output],
        {"type": "function_call_output", "call_id": call.call_id, "output": "a.py:1"},
    ]
    raw = client.responses.with_raw_response.create(model="o4-mini", input=history, **asked)
    assert raw.parse().output_text
    assert raw.headers["x-gateway-ignored-params"] == "reasoning.effort"
    assert "thinking" not in _sent(upstream, "/anthropic/v1/messages")[-1].body


def test_a_required_web_search_is_refused_naming_it_with_its_own_error_class(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    with pytest.raises(openai.BadRequestError) as refused:
        gateway.client().responses.create(
            model="o4-mini",
            input="What is new?",
            tools=[{"type": "web_search"}],
            tool_choice={"type": "web_search_preview"},
        )
    assert (refused.value.code, refused.value.param) == ("unsupported_parameter", "tool_choice")
    assert "'web_search_preview'" in refused.value.message
    assert upstream.received == []
    (row,) = gateway.rows(expect=1)
    assert (row["error_class"], row["http_status"]) == ("untranslatable", 400)


def test_a_reasoning_model_named_configuration_takes_what_clients_send_for_it(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    """For o-series names the openai SDK's users and agents send reasoning_effort,
    max_completion_tokens and a developer message: through Anthropic that is thinking."""
    upstream.behave("claude-sonnet", thinking="Two and two.", content="4")
    client = gateway.client()
    raw = client.chat.completions.with_raw_response.create(
        model="o4-mini",
        messages=[
            {"role": "developer", "content": "Answer with a number."},
            {"role": "user", "content": "2+2?"},
        ],
        reasoning_effort="low",
        max_completion_tokens=5000,
    )
    completion = raw.parse()
    assert completion.choices[0].message.content == "4"
    assert completion.choices[0].message.model_extra["reasoning_content"] == "Two and two."
    assert "x-gateway-ignored-params" not in raw.headers
    body = _sent(upstream, "/anthropic/v1/messages")[-1].body
    assert body["system"] == "Answer with a number."
    assert body["max_tokens"] == 5000
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    answer = client.responses.create(
        model="o4-mini",
        instructions="Answer with a number.",
        input="2+2?",
        reasoning={"effort": "high", "summary": "auto"},
        max_output_tokens=20000,
    )
    assert answer.output_text == "4"
    assert answer.output[0].type == "reasoning"
    assert answer.output[0].summary[0].text == "Two and two."
    assert _sent(upstream, "/anthropic/v1/messages")[-1].body["thinking"]["budget_tokens"] == 10000


def test_a_streamed_chat_answer_with_thinking_reads_with_the_sdks_stream_helper(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-sonnet", thinking="Two and two.", content="It is 4")
    with gateway.client().chat.completions.stream(
        model="o4-mini",
        messages=[{"role": "user", "content": "2+2?"}],
        reasoning_effort="low",
    ) as stream:
        chunks = [event.chunk for event in stream if event.type == "chunk"]
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "It is 4"
    for chunk in chunks:
        assert_valid(chunk.model_dump(exclude_unset=True), "CreateChatCompletionStreamResponse")
    thoughts = [c.choices[0].delta.model_extra or {} for c in chunks if c.choices]
    assert "".join(t.get("reasoning_content", "") for t in thoughts) == "Two and two."
    (blocks,) = [t["thinking_blocks"] for t in thoughts if "thinking_blocks" in t]
    assert blocks == [
        {"type": "thinking", "thinking": "Two and two.", "signature": signature_of("Two and two.")}
    ]
