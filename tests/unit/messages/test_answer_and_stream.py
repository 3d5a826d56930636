"""A chat answer as a message, a chat stream as Messages events; both validate against the
anthropic SDK's own types."""

from __future__ import annotations

from typing import Any

import anthropic
from pydantic import TypeAdapter

from gateway.domain.usage import Usage
from gateway.messages.answer import to_message
from gateway.messages.stream import MessagesStreamWriter

MESSAGE: TypeAdapter[Any] = TypeAdapter(anthropic.types.Message)
EVENT: TypeAdapter[Any] = TypeAdapter(anthropic.types.RawMessageStreamEvent)


def _chat(message: dict[str, Any], finish: str) -> dict[str, Any]:
    choice = {"index": 0, "message": message, "finish_reason": finish}
    return {"id": "chatcmpl-1", "model": "gpt-x", "choices": [choice]}


def test_text_and_usage_become_a_message() -> None:
    usage = Usage(120, 7, cache_read_tokens=100)
    message = to_message(_chat({"role": "assistant", "content": "Hi."}, "stop"), usage)
    MESSAGE.validate_python(message)
    assert message["content"] == [{"type": "text", "text": "Hi."}]
    assert message["stop_reason"] == "end_turn" and message["model"] == "gpt-x"
    assert message["usage"] == {
        "input_tokens": 20,
        "output_tokens": 7,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": 100,
    }


def test_tool_calls_become_tool_use_blocks_and_stop_reasons_map() -> None:
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
    }
    message = to_message(
        _chat({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"), None
    )
    MESSAGE.validate_python(message)
    assert message["content"] == [
        {"type": "tool_use", "id": "call_1", "name": "lookup", "input": {"q": "x"}}
    ]
    assert message["stop_reason"] == "tool_use"
    long = to_message(_chat({"role": "assistant", "content": "…"}, "length"), None)
    assert long["stop_reason"] == "max_tokens"


def _chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def test_a_chat_stream_becomes_the_messages_event_sequence() -> None:
    writer = MessagesStreamWriter("gpt-x")
    events: list[dict[str, Any]] = []
    events += writer.feed(_chunk({"role": "assistant", "content": "Let me "}))
    events += writer.feed(_chunk({"content": "look."}))
    head = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "lookup", "arguments": ""},
    }
    events += writer.feed(_chunk({"tool_calls": [head]}))
    events += writer.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"q"'}}]}))
    events += writer.feed(_chunk({"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}))
    events += writer.feed(_chunk({}, "tool_calls"))
    usage = {"prompt_tokens": 30, "completion_tokens": 9, "total_tokens": 39}
    events += writer.feed({"id": "c1", "model": "gpt-x", "choices": [], "usage": usage})
    events += writer.finish()
    for event in events:
        EVENT.validate_python(event)
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[5]["content_block"] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "lookup",
        "input": {},
    }
    assert [e["delta"]["partial_json"] for e in events[6:8]] == ['{"q"', ":1}"]
    assert events[5]["index"] == 1
    assert events[9]["delta"]["stop_reason"] == "tool_use"
    assert events[9]["usage"]["input_tokens"] == 30 and events[9]["usage"]["output_tokens"] == 9


def test_a_stream_ended_by_length_says_max_tokens() -> None:
    writer = MessagesStreamWriter("gpt-x")
    writer.feed(_chunk({"content": "a"}))
    writer.feed(_chunk({}, "length"))
    delta = next(e for e in writer.finish() if e["type"] == "message_delta")
    assert delta["delta"]["stop_reason"] == "max_tokens"


def test_reasoning_becomes_thinking_blocks_claudes_with_their_signatures() -> None:
    plain = {"role": "assistant", "content": "42.", "reasoning_content": "Let me think."}
    message = to_message(_chat(plain, "stop"), None)
    MESSAGE.validate_python(message)
    assert message["content"][0] == {
        "type": "thinking",
        "thinking": "Let me think.",
        "signature": "",
    }
    signed = {
        **plain,
        "thinking_blocks": [{"type": "thinking", "thinking": "Let me think.", "signature": "s1"}],
    }
    assert to_message(_chat(signed, "stop"), None)["content"][0]["signature"] == "s1"


def test_streamed_reasoning_is_a_thinking_block_closed_by_its_signature() -> None:
    writer = MessagesStreamWriter("claude")
    events: list[dict[str, Any]] = []
    events += writer.feed(_chunk({"reasoning_content": "Hmm"}))
    events += writer.feed(_chunk({"reasoning_content": "…"}))
    thought = {"type": "thinking", "thinking": "Hmm…", "signature": "sig-1"}
    events += writer.feed(_chunk({"thinking_blocks": [thought]}))
    events += writer.feed(_chunk({"content": "Done."}))
    events += writer.feed(_chunk({}, "stop"))
    events += writer.finish()
    for event in events:
        EVENT.validate_python(event)
    deltas = [
        (e["index"], e["delta"]["type"]) for e in events if e["type"] == "content_block_delta"
    ]
    assert deltas == [
        (0, "thinking_delta"),
        (0, "thinking_delta"),
        (0, "signature_delta"),
        (1, "text_delta"),
    ]
    assert events[1]["content_block"]["type"] == "thinking"
