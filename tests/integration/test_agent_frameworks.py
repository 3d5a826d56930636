"""Agent frameworks in their default setup call POST /v1/responses: pydantic-ai's
``Agent('openai:…')`` (its OpenAIResponsesModel), openai-agents' default model and
LangChain's ``ChatOpenAI(use_responses_api=True)``, each running a tool loop through the
gateway, offline against the fake upstreams: natively to the fake OpenAI Responses API,
translated for an OpenAI-compatible provider, for Anthropic and for Gemini."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from agents import Agent as OpenAIAgent
from agents import (
    ModelSettings,
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from openai.types.shared import Reasoning
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIResponsesModel

from tests.integration.gemini_support import fresh_gemini, gemini
from tests.support.fake_gemini import API_KEY, FakeGemini, Turn
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import TEST_KEY, RunningGateway, gateway_yaml

__all__ = ["fresh_gemini", "gemini"]

UPSTREAM_MODELS = ("small-model", "compat-small", "claude-haiku")
CONFIGURATIONS = ["chat", "translated", "claude-chat", "gemini-chat"]
# Named like reasoning models (to keep the clients' code unchanged), served translated
# (gpt-5 by Anthropic, o4-mini by an OpenAI-compatible provider): the frameworks change
# their requests for such names.
REASONING_NAMED = ["gpt-5", "o4-mini"]


@pytest.fixture
def gateway(
    upstream: FakeUpstream, fresh_gemini: FakeGemini, sqlite_url: str
) -> Iterator[RunningGateway]:
    running = RunningGateway(
        gateway_yaml(
            upstream.url,
            sqlite_url,
            providers=f"""
  - {{id: compat, adapter: custom, baseUrl: "{upstream.url}/v1", maxRetries: 0}}
  - {{id: claude, adapter: anthropic, baseUrl: "{upstream.url}/anthropic/v1",
     apiKey: "sk-ant-test", maxRetries: 0}}
  - {{id: google, adapter: gemini, baseUrl: "{fresh_gemini.base_url}", apiKey: "{API_KEY}",
     maxRetries: 0}}""",
            models="""
  - {id: compat-model, provider: compat, name: compat-small, capabilities: [chat, tools],
     price: {input: 0.50, output: 1.50}}
  - {id: haiku, provider: claude, name: claude-haiku, capabilities: [chat, tools],
     price: {input: 1.00, output: 5.00}}
  - {id: flash, provider: google, name: gemini-2.5-flash, capabilities: [chat, tools],
     price: {input: 0.30, output: 2.50}}""",
            configurations="""
  - {id: translated, mode: fixed, model: compat-model}
  - {id: claude-chat, mode: fixed, model: haiku}
  - {id: gpt-5, mode: fixed, model: haiku}
  - {id: o4-mini, mode: fixed, model: compat-model}
  - {id: gemini-chat, mode: fixed, model: flash}""",
        )
    )
    yield running
    running.stop()


def _agent_loop(upstream: FakeUpstream, gemini: FakeGemini | None = None) -> None:
    """Every fake model calls ``lookup`` until it gets the result, then answers."""
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 10}
    if gemini is not None:
        gemini.script(
            "gemini-2.5-flash",
            Turn(parts=[{"functionCall": {"name": "lookup", "args": {"q": "x"}}}], usage=usage),
            Turn(parts=[{"text": "x means ex."}], usage=usage),
        )
    for model in UPSTREAM_MODELS:
        upstream.behave(
            model,
            tool_call=True,
            tool_call_until_result=True,
            content="x means ex.",
            prompt_tokens=100,
            completion_tokens=10,
        )


def _assert_loop_recorded(gateway: RunningGateway, operation: str) -> None:
    rows = gateway.rows(expect=2)
    assert [r["operation"] for r in rows] == [operation, operation]
    assert all(r["success"] and r["actual_cost"] is not None for r in rows)


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_pydantic_ai_default_openai_model_runs_a_tool_loop(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    gemini: FakeGemini,
    monkeypatch: pytest.MonkeyPatch,
    configuration: str,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{gateway.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    _agent_loop(upstream, gemini)
    agent = Agent(f"openai:{configuration}")
    assert isinstance(agent.model, OpenAIResponsesModel)
    looked_up: list[str] = []

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look a word up."""
        looked_up.append(q)
        return "ex"

    result = agent.run_sync("What does x mean?")
    assert result.output == "x means ex."
    assert looked_up == ["x"]
    assert result.usage.input_tokens == 200
    _assert_loop_recorded(gateway, "responses")


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_pydantic_ai_streams_through_the_gateway(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    gemini: FakeGemini,
    monkeypatch: pytest.MonkeyPatch,
    configuration: str,
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{gateway.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    _agent_loop(upstream, gemini)
    agent = Agent(f"openai:{configuration}")

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look a word up."""
        return "ex"

    async def run() -> list[str]:
        async with agent.run_stream("What does x mean?") as streamed:
            return [text async for text in streamed.stream_text(delta=True)]

    pieces = asyncio.run(run())
    assert "".join(pieces) == "x means ex."
    _assert_loop_recorded(gateway, "responses_stream")


@pytest.fixture
def openai_agents_client(gateway: RunningGateway) -> Iterator[openai.AsyncOpenAI]:
    """openai-agents' default model (the Responses API) on the gateway, without tracing
    (which would export to OpenAI)."""
    client = openai.AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key=TEST_KEY, max_retries=0)
    set_tracing_disabled(True)
    set_default_openai_api("responses")
    set_default_openai_client(client, use_for_tracing=False)
    yield client


@function_tool
def lookup(q: str) -> str:
    """Look a word up."""
    return "ex"


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_openai_agents_default_model_runs_a_tool_loop(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    gemini: FakeGemini,
    openai_agents_client: openai.AsyncOpenAI,
    configuration: str,
) -> None:
    _agent_loop(upstream, gemini)
    agent = OpenAIAgent(
        name="helper", instructions="Use the tool.", tools=[lookup], model=configuration
    )
    result = Runner.run_sync(agent, "What does x mean?")
    assert result.final_output == "x means ex."
    _assert_loop_recorded(gateway, "responses")
    sent = [r for r in upstream.received if r.body.get("model") in UPSTREAM_MODELS]
    assert len(sent) + len(gemini.received) == 2


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_openai_agents_streams_through_the_gateway(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    gemini: FakeGemini,
    openai_agents_client: openai.AsyncOpenAI,
    configuration: str,
) -> None:
    _agent_loop(upstream, gemini)
    agent = OpenAIAgent(
        name="helper", instructions="Use the tool.", tools=[lookup], model=configuration
    )

    async def run() -> str:
        streamed = Runner.run_streamed(agent, "What does x mean?")
        async for _ in streamed.stream_events():
            pass
        return str(streamed.final_output)

    assert asyncio.run(run()) == "x means ex."
    _assert_loop_recorded(gateway, "responses_stream")


@tool("lookup")
def langchain_lookup(q: str) -> str:
    """Look a word up."""
    return "ex"


@pytest.mark.parametrize("configuration", CONFIGURATIONS)
def test_langchain_chat_openai_with_the_responses_api_runs_a_tool_loop(
    gateway: RunningGateway, upstream: FakeUpstream, gemini: FakeGemini, configuration: str
) -> None:
    _agent_loop(upstream, gemini)
    model = ChatOpenAI(
        model=configuration,
        base_url=f"{gateway.url}/v1",
        api_key=TEST_KEY,  # type: ignore[arg-type]
        use_responses_api=True,
        max_retries=0,
    ).bind_tools([langchain_lookup])
    messages: list[Any] = [HumanMessage("What does x mean?")]
    first = model.invoke(messages)
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("lookup", {"q": "x"})
    messages += [first, ToolMessage("ex", tool_call_id=call["id"])]
    second = model.invoke(messages)
    assert second.text == "x means ex."
    _assert_loop_recorded(gateway, "responses")


def _ignored(gateway: RunningGateway) -> list[str | None]:
    return [r["ignored_params"] for r in gateway.rows(expect=2)]


@pytest.mark.parametrize(
    ("configuration", "ignored"),
    [("gpt-5", None), ("o4-mini", "include[reasoning.encrypted_content]")],
)
def test_pydantic_ai_runs_a_tool_loop_on_configurations_named_like_reasoning_models(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    monkeypatch: pytest.MonkeyPatch,
    configuration: str,
    ignored: str | None,
) -> None:
    """For such names pydantic-ai asks for the encrypted reasoning: Anthropic carries it,
    an OpenAI-compatible provider has none (listed)."""
    monkeypatch.setenv("OPENAI_BASE_URL", f"{gateway.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    _agent_loop(upstream)
    agent = Agent(f"openai:{configuration}")

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look a word up."""
        return "ex"

    assert agent.run_sync("What does x mean?").output == "x means ex."
    _assert_loop_recorded(gateway, "responses")
    assert _ignored(gateway) == [ignored, ignored]


@pytest.mark.parametrize(
    ("configuration", "ignored"),
    [
        # gpt-5's defaults: reasoning effort low (thinking on Anthropic) and verbosity low;
        # the second turn cannot send the thinking back (no encrypted reasoning kept), so
        # it goes without thinking.
        ("gpt-5", ["text.verbosity", "text.verbosity,reasoning.effort"]),
        ("o4-mini", [None, None]),
    ],
)
def test_openai_agents_runs_a_tool_loop_on_configurations_named_like_reasoning_models(
    gateway: RunningGateway,
    upstream: FakeUpstream,
    openai_agents_client: openai.AsyncOpenAI,
    configuration: str,
    ignored: list[str | None],
) -> None:
    _agent_loop(upstream)
    agent = OpenAIAgent(
        name="helper", instructions="Use the tool.", tools=[lookup], model=configuration
    )
    assert Runner.run_sync(agent, "What does x mean?").final_output == "x means ex."
    _assert_loop_recorded(gateway, "responses")
    assert _ignored(gateway) == ignored
    if configuration == "gpt-5":
        first = next(r for r in upstream.received if r.path == "/anthropic/v1/messages")
        assert first.body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


@pytest.mark.parametrize("configuration", REASONING_NAMED)
@pytest.mark.parametrize("use_responses_api", [True, False])
def test_langchain_with_a_reasoning_effort_on_configurations_named_like_reasoning_models(
    gateway: RunningGateway, upstream: FakeUpstream, configuration: str, use_responses_api: bool
) -> None:
    _agent_loop(upstream)
    model = ChatOpenAI(
        model=configuration,
        base_url=f"{gateway.url}/v1",
        api_key=TEST_KEY,  # type: ignore[arg-type]
        use_responses_api=use_responses_api,
        reasoning_effort="low",
        max_retries=0,
    ).bind_tools([langchain_lookup])
    messages: list[Any] = [HumanMessage("What does x mean?")]
    first = model.invoke(messages)
    (call,) = first.tool_calls
    messages += [first, ToolMessage("ex", tool_call_id=call["id"])]
    assert model.invoke(messages).text == "x means ex."
    rows = gateway.rows(expect=2)
    assert all(r["success"] for r in rows)
    sent = upstream.received[0].body
    if configuration == "gpt-5":  # Anthropic: extended thinking
        assert sent["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    else:
        assert sent["reasoning_effort"] == "low"


def test_openai_agents_keeps_its_thinking_across_the_loop_with_encrypted_reasoning(
    gateway: RunningGateway, upstream: FakeUpstream, openai_agents_client: openai.AsyncOpenAI
) -> None:
    _agent_loop(upstream)
    settings = ModelSettings(
        reasoning=Reasoning(effort="low"),
        verbosity="low",
        response_include=["reasoning.encrypted_content"],
    )
    agent = OpenAIAgent(
        name="helper",
        instructions="Use the tool.",
        tools=[lookup],
        model="gpt-5",
        model_settings=settings,
    )
    assert Runner.run_sync(agent, "What does x mean?").final_output == "x means ex."
    assert _ignored(gateway) == ["text.verbosity", "text.verbosity"]
    sent = [r.body for r in upstream.received if r.path == "/anthropic/v1/messages"]
    assert [b["thinking"]["type"] for b in sent] == ["enabled", "enabled"]
    assert sent[1]["messages"][1]["content"][0]["type"] == "thinking"
