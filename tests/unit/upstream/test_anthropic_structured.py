"""response_format for Anthropic: a forced tool out, its input back as the JSON content."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai.lib._parsing._completions import type_to_response_format_param
from pydantic import BaseModel

from gateway.upstream.anthropic.stream import StreamTranslator
from gateway.upstream.anthropic.tools import JSON_OBJECT_TOOL
from gateway.upstream.anthropic.translate import (
    TranslationError,
    from_messages_response,
    translate_request,
)
from tests.support.openai_schema import assert_valid

MODEL = "claude-sonnet-4-5"


class Step(BaseModel):
    explanation: str
    output: str


class MathAnswer(BaseModel):
    steps: list[Step]
    final_answer: str


# What openai's client.chat.completions.parse(response_format=MathAnswer) sends.
PARSE_FORMAT: dict[str, Any] = dict(type_to_response_format_param(MathAnswer))
SCHEMA = PARSE_FORMAT["json_schema"]["schema"]
TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
LOOKUP = {"name": "lookup", "input_schema": {"type": "object"}}


def translate(**body: Any) -> tuple[dict[str, Any], str | None]:
    body.setdefault("messages", [{"role": "user", "content": "What is 2+2?"}])
    request = translate_request(body, MODEL, 1024)
    return request.payload, request.response_tool


# --- the request ---------------------------------------------------------------------------


def test_a_json_schema_becomes_one_forced_tool_with_that_schema() -> None:
    out, tool = translate(response_format=PARSE_FORMAT)
    assert tool == "MathAnswer"
    (sent,) = out["tools"]
    assert sent["name"] == "MathAnswer"
    assert sent["input_schema"] == SCHEMA  # $defs, additionalProperties and all
    assert sent["description"]
    assert out["tool_choice"] == {
        "type": "tool",
        "name": "MathAnswer",
        "disable_parallel_tool_use": True,
    }
    assert "strict" not in json.dumps(out)  # no Anthropic counterpart (see the module doc)


def test_the_schema_description_describes_the_tool() -> None:
    fmt = {
        "type": "json_schema",
        "json_schema": {"name": "a", "description": "An A.", "schema": {}},
    }
    out, _ = translate(response_format=fmt)
    assert out["tools"][0]["description"] == "An A."
    assert out["tools"][0]["input_schema"] == {"type": "object"}  # an untyped root is an object


def test_json_object_becomes_a_forced_open_object_tool() -> None:
    out, tool = translate(response_format={"type": "json_object"})
    assert tool == JSON_OBJECT_TOOL
    (sent,) = out["tools"]
    assert sent["input_schema"] == {
        "type": "object",
        "properties": {},
        "additionalProperties": True,
    }
    assert out["tool_choice"]["name"] == JSON_OBJECT_TOOL


@pytest.mark.parametrize("fmt", [None, {"type": "text"}])
def test_text_or_no_response_format_adds_nothing(fmt: Any) -> None:
    out, tool = translate(response_format=fmt)
    assert tool is None and "tools" not in out and "tool_choice" not in out


@pytest.mark.parametrize(
    ("fmt", "param"),
    [
        ({"type": "grammar"}, "response_format.type"),
        ("json", "response_format.type"),
        ({"type": "json_schema"}, "response_format"),
        (
            {"type": "json_schema", "json_schema": {"schema": {}}},
            "response_format.json_schema.name",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "a b", "schema": {}}},
            "response_format.json_schema.name",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "array"}}},
            "response_format.json_schema.schema",
        ),
        (
            {"type": "json_schema", "json_schema": {"name": "a", "schema": "{}"}},
            "response_format.json_schema.schema",
        ),
    ],
)
def test_what_cannot_be_translated_is_refused_naming_the_param(fmt: Any, param: str) -> None:
    with pytest.raises(TranslationError) as info:
        translate(response_format=fmt)
    assert info.value.param == param


@pytest.mark.parametrize("choice", [None, "auto"])
def test_with_the_clients_tools_the_model_must_call_a_tool_or_answer_in_json(
    choice: Any,
) -> None:
    out, tool = translate(response_format=PARSE_FORMAT, tools=TOOLS, tool_choice=choice)
    assert tool == "MathAnswer"
    assert [t["name"] for t in out["tools"]] == ["lookup", "MathAnswer"]
    assert out["tool_choice"] == {"type": "any"}
    out, _ = translate(response_format=PARSE_FORMAT, tools=TOOLS, parallel_tool_calls=False)
    assert out["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}


def test_with_tool_choice_none_the_json_answer_is_forced() -> None:
    out, tool = translate(response_format=PARSE_FORMAT, tools=TOOLS, tool_choice="none")
    assert tool == "MathAnswer"
    assert [t["name"] for t in out["tools"]] == ["lookup", "MathAnswer"]
    assert out["tool_choice"]["type"] == "tool" and out["tool_choice"]["name"] == "MathAnswer"


@pytest.mark.parametrize(
    "choice", ["required", {"type": "function", "function": {"name": "lookup"}}]
)
def test_when_the_client_demands_its_own_tool_the_response_tool_stays_out(choice: Any) -> None:
    out, tool = translate(response_format=PARSE_FORMAT, tools=TOOLS, tool_choice=choice)
    assert tool is None
    assert out["tools"] == [LOOKUP]


def test_a_response_format_named_like_a_client_tool_is_refused() -> None:
    fmt = {"type": "json_schema", "json_schema": {"name": "lookup", "schema": {}}}
    with pytest.raises(TranslationError) as info:
        translate(response_format=fmt, tools=TOOLS)
    assert info.value.param == "response_format.json_schema.name"


# --- the whole answer ----------------------------------------------------------------------

ANSWER = {"steps": [{"explanation": "add", "output": "4"}], "final_answer": "4"}


def _message(content: list[dict[str, Any]], stop_reason: str = "tool_use") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def _use(name: str, data: dict[str, Any], ident: str = "toolu_1") -> dict[str, Any]:
    return {"type": "tool_use", "id": ident, "name": name, "input": data}


def test_the_response_tools_input_is_the_answers_json_content() -> None:
    out = from_messages_response(_message([_use("MathAnswer", ANSWER)]), 1, "MathAnswer")
    assert_valid(out, "CreateChatCompletionResponse")
    choice = out["choices"][0]
    assert choice["finish_reason"] == "stop"
    assert "tool_calls" not in choice["message"]
    assert MathAnswer.model_validate_json(choice["message"]["content"]) == MathAnswer(**ANSWER)


def test_a_truncated_json_answer_still_says_length() -> None:
    out = from_messages_response(_message([_use("J", {})], "max_tokens"), 1, "J")
    assert out["choices"][0]["finish_reason"] == "length"


def test_client_tool_calls_beside_the_json_answer_stay_tool_calls() -> None:
    content = [_use("lookup", {"q": "x"}, "toolu_2"), _use("MathAnswer", ANSWER)]
    out = from_messages_response(_message(content), 1, "MathAnswer")
    assert_valid(out, "CreateChatCompletionResponse")
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert [c["function"]["name"] for c in choice["message"]["tool_calls"]] == ["lookup"]
    assert json.loads(choice["message"]["content"]) == ANSWER


def test_without_a_response_tool_a_same_named_tool_call_is_a_tool_call() -> None:
    out = from_messages_response(_message([_use("MathAnswer", ANSWER)]), 1)
    assert out["choices"][0]["finish_reason"] == "tool_calls"
    assert out["choices"][0]["message"]["content"] is None


# --- the stream ----------------------------------------------------------------------------


def _tool_stream(name: str, pieces: list[str]) -> list[tuple[str, dict[str, Any]]]:
    start = {"id": "msg_s", "model": "claude-x", "usage": {"input_tokens": 9, "output_tokens": 1}}
    block = {"type": "tool_use", "id": "toolu_9", "name": name, "input": {}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
    ]
    for piece in pieces:
        delta = {"type": "input_json_delta", "partial_json": piece}
        events.append(
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _run(events: list[tuple[str, dict[str, Any]]], tool: str | None) -> list[dict[str, Any]]:
    translator = StreamTranslator(MODEL, 1, tool)
    return [chunk for event, data in events for chunk in translator.feed(event, data)]


def test_the_response_tools_streamed_input_becomes_content_deltas() -> None:
    text = json.dumps(ANSWER)
    pieces = ["", text[:7], text[7:20], text[20:]]
    chunks = _run(_tool_stream("MathAnswer", pieces), "MathAnswer")
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert all("tool_calls" not in d for d in deltas)
    assert "".join(d.get("content") or "" for d in deltas) == text
    assert [c["choices"][0]["finish_reason"] for c in chunks][-1] == "stop"


def test_a_streamed_json_answer_with_no_input_is_an_empty_object() -> None:
    chunks = _run(_tool_stream("J", [""]), "J")
    assert "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "{}"


def test_without_a_response_tool_the_stream_keeps_its_tool_calls() -> None:
    chunks = _run(_tool_stream("MathAnswer", ['{"a": 1}']), None)
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert any("tool_calls" in c["choices"][0]["delta"] for c in chunks)


# --- text the model wrote around the answer tool ---------------------------------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def test_text_around_the_response_tool_is_dropped_the_json_alone_is_the_content() -> None:
    content = [_text("Let me check."), _use("MathAnswer", ANSWER), _text(" Done.")]
    out = from_messages_response(_message(content), 1, "MathAnswer")
    assert_valid(out, "CreateChatCompletionResponse")
    choice = out["choices"][0]
    assert json.loads(choice["message"]["content"]) == ANSWER
    assert choice["finish_reason"] == "stop"


def test_with_a_response_tool_that_is_not_called_the_text_is_the_content() -> None:
    out = from_messages_response(_message([_text("No JSON today.")], "end_turn"), 1, "J")
    assert out["choices"][0]["message"]["content"] == "No JSON today."
    calls = [_text("Looking it up."), _use("lookup", {"q": "x"}, "toolu_2")]
    out = from_messages_response(_message(calls), 1, "J")  # a client tool: text stays
    assert out["choices"][0]["message"]["content"] == "Looking it up."
    assert out["choices"][0]["finish_reason"] == "tool_calls"


Block = tuple[str, str, list[str]]  # ("text", "", pieces) or ("tool_use", name, pieces)


def _blocks_stream(blocks: list[Block], stop: str) -> list[tuple[str, dict[str, Any]]]:
    start = {"id": "msg_s", "model": "claude-x", "usage": {"input_tokens": 9, "output_tokens": 1}}
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"type": "message_start", "message": start})
    ]
    for index, (kind, name, pieces) in enumerate(blocks):
        if kind == "text":
            block: dict[str, Any] = _text("")
            deltas = [{"type": "text_delta", "text": p} for p in pieces]
        else:
            block = {"type": "tool_use", "id": f"toolu_{index}", "name": name, "input": {}}
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces]
        events.append(
            (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": block},
            )
        )
        events += [
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": d})
            for d in deltas
        ]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    events += [
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def _content_of(chunks: list[dict[str, Any]]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def test_a_streamed_preamble_and_postscript_around_the_response_tool_are_dropped() -> None:
    text = json.dumps(ANSWER)
    blocks: list[Block] = [
        ("text", "", ["Let me ", "check."]),
        ("tool_use", "MathAnswer", [text[:9], text[9:]]),
        ("text", "", ["Done."]),
    ]
    chunks = _run(_blocks_stream(blocks, "tool_use"), "MathAnswer")
    for chunk in chunks:
        assert_valid(chunk, "CreateChatCompletionStreamResponse")
    assert json.loads(_content_of(chunks)) == ANSWER
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_streamed_text_without_the_response_tool_is_sent_before_the_finish() -> None:
    chunks = _run(_blocks_stream([("text", "", ["No ", "JSON."])], "end_turn"), "J")
    assert _content_of(chunks) == "No JSON."
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert chunks[-2]["choices"][0]["delta"] == {"content": "No JSON."}


def test_streamed_text_before_a_client_tool_call_is_sent_before_the_call() -> None:
    blocks: list[Block] = [("text", "", ["Looking ", "it up."]), ("tool_use", "lookup", ["{}"])]
    chunks = _run(_blocks_stream(blocks, "tool_use"), "J")
    deltas = [c["choices"][0]["delta"] for c in chunks]
    (said,) = [i for i, d in enumerate(deltas) if d.get("content")]
    first_call = next(i for i, d in enumerate(deltas) if "tool_calls" in d)
    assert deltas[said]["content"] == "Looking it up." and said < first_call
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"


def test_without_a_response_tool_streamed_text_goes_at_once() -> None:
    translator = StreamTranslator(MODEL, 1, None)
    for event, data in _blocks_stream([("text", "", ["Hi"])], "end_turn")[:3]:
        chunks = translator.feed(event, data)
    assert chunks[0]["choices"][0]["delta"]["content"] == "Hi"


@pytest.mark.parametrize("fmt", [{"type": "json_object"}, PARSE_FORMAT])
def test_json_output_with_extended_thinking_leaves_thinking_out_and_lists_it(fmt: Any) -> None:
    body = {"messages": [{"role": "user", "content": "What is 2+2?"}]}
    request = translate_request(
        {**body, "response_format": fmt, "reasoning_effort": "low"}, MODEL, 4096
    )
    assert "thinking" not in request.payload  # thinking cannot force the answer tool
    assert request.payload["tool_choice"]["type"] == "tool"
    assert request.ignored == ("reasoning_effort",)
