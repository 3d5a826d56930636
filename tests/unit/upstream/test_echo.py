"""The echo demo adapter's answers and stream chunks conform to OpenAI's published schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.domain.model import AdapterType, Endpoint, Model, Provider
from gateway.upstream.base import UpstreamCall
from gateway.upstream.echo import EchoAdapter
from tests.support.openai_schema import COMPLETION_STREAM_CHUNK, assert_valid

PROVIDER = Provider(id="demo", adapter=AdapterType.ECHO, base_url="")
MODEL = Model(id="echo", provider="demo", name="echo-1")


def _call(endpoint: Endpoint, body: dict[str, Any], stream: bool = False) -> UpstreamCall:
    return UpstreamCall(PROVIDER, MODEL, endpoint, body, stream, remaining_seconds=10)


async def _chunks(call: UpstreamCall, ask_usage: bool) -> list[Any]:
    events: list[Any] = []
    async for raw in await EchoAdapter().open_stream(call, ask_usage):
        data = raw.decode().removeprefix("data: ").strip()
        events.append(data if data == "[DONE]" else json.loads(data))
    return events


CHAT = {"model": "x", "messages": [{"role": "user", "content": "hello there"}]}


async def test_a_whole_chat_answer_is_a_valid_chat_completion() -> None:
    reply = await EchoAdapter().complete(_call(Endpoint.CHAT, CHAT))
    assert_valid(reply.body, "CreateChatCompletionResponse")
    choice = reply.body["choices"][0]
    assert choice["message"] == {
        "role": "assistant",
        "content": "echo: hello there",
        "refusal": None,
    }
    assert choice["logprobs"] is None


@pytest.mark.parametrize("ask_usage", [True, False])
async def test_every_chat_chunk_is_a_valid_chunk(ask_usage: bool) -> None:
    events = await _chunks(_call(Endpoint.CHAT, CHAT, stream=True), ask_usage)
    assert events[-1] == "[DONE]"
    chunks = events[:-1]
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])
    assert text == "echo: hello there"
    assert ("usage" in chunks[-1]) is ask_usage


@pytest.mark.parametrize("prompt", ["Say this", ["Say", "this"], [1, 2, 3], None])
async def test_a_whole_completion_is_valid_for_every_prompt_shape(prompt: Any) -> None:
    body = {"model": "x", "prompt": prompt}
    reply = await EchoAdapter().complete(_call(Endpoint.COMPLETIONS, body))
    assert_valid(reply.body, "CreateCompletionResponse")
    assert reply.usage is not None and reply.usage.input_tokens >= 1


async def test_a_null_prompt_is_answered_as_an_empty_document() -> None:
    reply = await EchoAdapter().complete(
        _call(Endpoint.COMPLETIONS, {"model": "x", "prompt": None})
    )
    assert reply.body["choices"][0]["text"] == "echo: "


async def test_every_completion_chunk_is_valid() -> None:
    call = _call(Endpoint.COMPLETIONS, {"model": "x", "prompt": None}, stream=True)
    events = await _chunks(call, ask_usage=True)
    for chunk in events[:-1]:
        assert_valid(chunk, COMPLETION_STREAM_CHUNK)
    # Only the last choice chunk says why the text ended.
    finishes = [c["choices"][0]["finish_reason"] for c in events[:-1] if c["choices"]]
    assert finishes[-1] == "stop" and set(finishes[:-1]) == {None}
    *_, last_choice, usage_chunk, _done = events
    assert_valid({**last_choice, "usage": usage_chunk["usage"]}, "CreateCompletionResponse")


@pytest.mark.parametrize("value", ["one text", ["a", "b"]])
async def test_embeddings_are_a_valid_embedding_list(value: Any) -> None:
    reply = await EchoAdapter().complete(_call(Endpoint.EMBEDDINGS, {"model": "x", "input": value}))
    assert_valid(reply.body, "CreateEmbeddingResponse")
    assert len(reply.body["data"]) == (1 if isinstance(value, str) else 2)
