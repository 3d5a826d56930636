"""Chat answers and chat streams as Responses API answers and events, checked against
OpenAI's published schema; and the tracker that watches a Responses stream."""

from __future__ import annotations

import json
from typing import Any

from gateway.domain.usage import Usage
from gateway.responses.answer import to_response
from gateway.responses.stream import ResponsesStreamWriter
from gateway.streaming.responses_stream import ResponsesStreamTracker
from gateway.usage.openai_usage import usage_from_responses
from tests.support.openai_schema import assert_valid

REQUEST: dict[str, Any] = {"model": "cfg", "input": "Hi", "instructions": "Be brief."}


def chat_answer(message: dict[str, Any], finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "up-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": 10,
            "completion_tokens": 4,
            "completion_tokens_details": {"reasoning_tokens": 2},
        },
    }


def test_a_text_answer_is_a_completed_response_with_usage() -> None:
    usage = Usage(10, 4, cache_read_tokens=3, cache_write_tokens=1)
    chat = chat_answer({"role": "assistant", "content": "Hello"})
    response = to_response(chat, REQUEST, usage, 1700000000)
    assert_valid(response, "Response")
    assert response["id"].startswith("resp_") and response["status"] == "completed"
    assert response["model"] == "up-model" and response["instructions"] == "Be brief."
    (item,) = response["output"]
    assert item["type"] == "message" and item["content"][0]["text"] == "Hello"
    assert response["usage"] == {
        "input_tokens": 10,
        "input_tokens_details": {"cached_tokens": 3, "cache_write_tokens": 1},
        "output_tokens": 4,
        "output_tokens_details": {"reasoning_tokens": 2},
        "total_tokens": 14,
    }
    assert usage_from_responses(response["usage"]) == usage


def test_tool_calls_are_function_call_items_and_length_is_incomplete() -> None:
    calls = [{"id": "call_9", "type": "function", "function": {"name": "f", "arguments": "{}"}}]
    chat = chat_answer({"role": "assistant", "content": None, "tool_calls": calls}, "tool_calls")
    response = to_response(chat, {**REQUEST, "tools": []}, None, 1)
    assert_valid(response, "Response")
    (item,) = response["output"]
    assert (item["type"], item["call_id"], item["name"]) == ("function_call", "call_9", "f")
    assert "usage" not in response

    cut = to_response(
        chat_answer({"role": "assistant", "content": "Hel"}, "length"), REQUEST, None, 1
    )
    assert_valid(cut, "Response")
    assert cut["status"] == "incomplete"
    assert cut["incomplete_details"] == {"reason": "max_output_tokens"}


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"model": "up-model", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_a_chat_stream_becomes_the_responses_event_sequence() -> None:
    writer = ResponsesStreamWriter(REQUEST, 1, "")
    events = writer.start()
    events += writer.feed(chunk({"role": "assistant", "content": ""}))
    events += writer.feed(chunk({"content": "Hel"}))
    events += writer.feed(chunk({"content": "lo"}))
    call = {"index": 0, "id": "call_1", "function": {"name": "f", "arguments": ""}}
    events += writer.feed(chunk({"tool_calls": [call]}))
    events += writer.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"a"'}}]}))
    events += writer.feed(chunk({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}))
    events += writer.feed(chunk({}, "tool_calls"))
    events += writer.feed({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    events += writer.finish()
    for event in events:
        assert_valid(event, "ResponseStreamEvent")
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = events[-1]["response"]
    assert final["model"] == "up-model" and final["status"] == "completed"
    assert [i["type"] for i in final["output"]] == ["message", "function_call"]
    assert final["output"][0]["content"][0]["text"] == "Hello"
    assert final["output"][1]["arguments"] == '{"a":1}'
    assert final["usage"]["total_tokens"] == 8

    tracker = ResponsesStreamTracker()
    for event in events:
        tracker.observe(json.dumps(event), event["type"])
    assert tracker.done and tracker.usage == Usage(5, 3)
    assert tracker.model == "up-model" and tracker.finish_reason == "completed"
    assert tracker.next_sequence_number() == len(events)
    assert tracker.tally.total() > 0  # the deltas were counted


def test_an_empty_answer_is_still_one_message_and_an_error_event_is_numbered() -> None:
    writer = ResponsesStreamWriter(REQUEST, 1, "m")
    events = [*writer.start(), *writer.feed(chunk({}, "stop")), *writer.finish()]
    for event in events:
        assert_valid(event, "ResponseStreamEvent")
    assert events[-1]["response"]["output"][0]["type"] == "message"
    failed = ResponsesStreamWriter(REQUEST, 1, "m")
    started = failed.start()
    error = failed.error(code="overloaded", message="busy")
    assert_valid(error, "ResponseStreamEvent")
    assert error["sequence_number"] == len(started)


def test_the_tracker_reads_errors_and_refuses_what_is_not_json() -> None:
    tracker = ResponsesStreamTracker()
    assert tracker.observe("not json").invalid
    failed = {"type": "response.failed", "sequence_number": 4, "response": {"status": "failed"}}
    assert tracker.observe(json.dumps(failed)).error
    assert not tracker.done and tracker.next_sequence_number() == 5
    assert ResponsesStreamTracker().observe("oops", "error").error
