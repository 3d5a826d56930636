"""The Messages stream tracker: usage from message_start and message_delta, the end at
message_stop, errors, the text counted."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from gateway.domain.usage import Usage
from gateway.streaming.messages_stream import MessagesStreamTracker, with_message_cost


def _feed(tracker: MessagesStreamTracker, name: str, payload: dict[str, Any]) -> Any:
    return tracker.observe(json.dumps({"type": name, **payload}), name)


def test_usage_is_merged_from_message_start_and_message_delta() -> None:
    tracker = MessagesStreamTracker()
    start = {
        "model": "claude-x",
        "usage": {
            "input_tokens": 10,
            "cache_read_input_tokens": 100,
            "cache_creation_input_tokens": 5,
            "output_tokens": 1,
        },
    }
    _feed(tracker, "message_start", {"message": start})
    assert tracker.model == "claude-x"
    seen = _feed(
        tracker, "content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "Hi"}}
    )
    assert seen.has_content
    delta = _feed(
        tracker,
        "message_delta",
        {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 7}},
    )
    assert delta.has_usage and tracker.finish_reason == "end_turn"
    assert tracker.usage == Usage(115, 7, cache_read_tokens=100, cache_write_tokens=5)
    assert not tracker.done
    _feed(tracker, "message_stop", {})
    assert tracker.done


def test_all_zero_usage_counts_as_not_reported() -> None:
    tracker = MessagesStreamTracker()
    _feed(tracker, "message_start", {"message": {"usage": {"input_tokens": 0, "output_tokens": 0}}})
    _feed(tracker, "message_delta", {"delta": {}, "usage": {"output_tokens": 0}})
    assert tracker.usage is None


def test_thinking_and_tool_input_are_counted_as_output() -> None:
    tracker = MessagesStreamTracker()
    for delta in (
        {"type": "thinking_delta", "thinking": "abcd"},
        {"type": "signature_delta", "signature": "zzzzzzzz"},
        {"type": "input_json_delta", "partial_json": "{}"},
    ):
        _feed(tracker, "content_block_delta", {"index": 0, "delta": delta})
    assert tracker.estimate_output_tokens().tokens == 2  # "abcd" and "{}": 4 + 2 chars / 4


def test_an_error_event_is_an_error_and_non_json_data_is_invalid() -> None:
    tracker = MessagesStreamTracker()
    seen = _feed(tracker, "error", {"error": {"type": "overloaded_error", "message": "x"}})
    assert seen.error and tracker.error["error"]["type"] == "overloaded_error"
    assert MessagesStreamTracker().observe("not json", "content_block_delta").invalid
    assert MessagesStreamTracker().observe("not json", "error").error


def test_the_cost_goes_into_message_deltas_usage() -> None:
    event = {"type": "message_delta", "delta": {}, "usage": {"output_tokens": 3}}
    out = with_message_cost(event, Decimal("0.000012"))
    assert out.startswith(b"event: message_delta\n")
    data = json.loads(out.split(b"data: ", 1)[1])
    assert data["usage"] == {"output_tokens": 3, "cost": 0.000012}
