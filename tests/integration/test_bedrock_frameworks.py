"""Agent frameworks on a Bedrock-backed configuration: pydantic-ai, openai-agents and
LangChain, each with its chat-completions model and its Responses model, running a tool
loop through the gateway to the fake Bedrock Runtime (SigV4 verified on every call)."""

from __future__ import annotations

import asyncio
from typing import Any

import openai
import pytest
from agents import Agent as OpenAIAgent
from agents import (
    Runner,
    function_tool,
    set_default_openai_api,
    set_default_openai_client,
    set_tracing_disabled,
)
from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from pydantic_ai import Agent

from tests.integration.bedrock_support import (
    CLAUDE,
    _fresh,
    aws_environment,
    bedrock,
    gateway,
    new_rows,
)
from tests.support.fake_bedrock import Answer, FakeBedrock
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["_fresh", "aws_environment", "bedrock", "gateway"]

APIS = ["chat", "responses"]


def _loop(bedrock: FakeBedrock) -> None:
    """Claude calls ``lookup``, then answers with its result."""
    call = {"toolUseId": "tooluse_x", "name": "lookup", "input": {"q": "x"}}
    bedrock.script(CLAUDE, Answer(text="", tool_uses=[call]), Answer(text="x means ex."))


def _assert_loop(gateway: RunningGateway, bedrock: FakeBedrock, before: int, api: str) -> None:
    rows = new_rows(gateway, before, expect=2)
    assert len(rows) == 2 and all(r["success"] and r["actual_cost"] is not None for r in rows)
    assert all(r["adapter_type"] == "bedrock" for r in rows)
    responses = [str(r["operation"]).startswith("responses") for r in rows]
    assert responses == [api == "responses"] * 2  # the API the framework called
    assert bedrock.refused == []
    results = [
        block["toolResult"]
        for block in bedrock.received[-1].body["messages"][-1]["content"]
        if "toolResult" in block
    ]
    assert results == [{"toolUseId": "tooluse_x", "content": [{"text": "ex"}]}]


@pytest.mark.parametrize("api", APIS)
def test_pydantic_ai_runs_a_tool_loop(
    gateway: RunningGateway, bedrock: FakeBedrock, monkeypatch: pytest.MonkeyPatch, api: str
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", f"{gateway.url}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    _loop(bedrock)
    before = len(gateway.rows())
    agent = Agent("openai-chat:claude-chat" if api == "chat" else "openai:claude-chat")
    looked_up: list[str] = []

    @agent.tool_plain
    def lookup(q: str) -> str:
        """Look a word up."""
        looked_up.append(q)
        return "ex"

    assert agent.run_sync("What does x mean?").output == "x means ex."
    assert looked_up == ["x"]
    _assert_loop(gateway, bedrock, before, api)


@function_tool
def lookup(q: str) -> str:
    """Look a word up."""
    return "ex"


@pytest.mark.parametrize("api", APIS)
def test_openai_agents_runs_a_tool_loop_streamed(
    gateway: RunningGateway, bedrock: FakeBedrock, api: str
) -> None:
    client = openai.AsyncOpenAI(base_url=f"{gateway.url}/v1", api_key=TEST_KEY, max_retries=0)
    set_tracing_disabled(True)
    set_default_openai_api("chat_completions" if api == "chat" else "responses")
    set_default_openai_client(client, use_for_tracing=False)
    _loop(bedrock)
    before = len(gateway.rows())
    agent = OpenAIAgent(
        name="helper", instructions="Use the tool.", tools=[lookup], model="claude-chat"
    )

    async def run() -> str:
        streamed = Runner.run_streamed(agent, "What does x mean?")
        async for _ in streamed.stream_events():
            pass
        return str(streamed.final_output)

    try:
        assert asyncio.run(run()) == "x means ex."
    finally:
        set_default_openai_api("responses")
    _assert_loop(gateway, bedrock, before, api)


@tool("lookup")
def langchain_lookup(q: str) -> str:
    """Look a word up."""
    return "ex"


@pytest.mark.parametrize("api", APIS)
def test_langchain_runs_a_tool_loop(
    gateway: RunningGateway, bedrock: FakeBedrock, api: str
) -> None:
    _loop(bedrock)
    before = len(gateway.rows())
    model = ChatOpenAI(
        model="claude-chat",
        base_url=f"{gateway.url}/v1",
        api_key=TEST_KEY,  # type: ignore[arg-type]
        use_responses_api=api == "responses",
        max_retries=0,
    ).bind_tools([langchain_lookup])
    messages: list[Any] = [HumanMessage("What does x mean?")]
    first = model.invoke(messages)
    (call,) = first.tool_calls
    assert (call["name"], call["args"]) == ("lookup", {"q": "x"})
    messages += [first, ToolMessage("ex", tool_call_id=call["id"])]
    assert model.invoke(messages).text == "x means ex."
    _assert_loop(gateway, bedrock, before, api)
