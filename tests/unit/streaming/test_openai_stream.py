"""StreamUsageTracker classifies each event for the relay and keeps the call's totals."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from gateway.domain.usage import TokenCount, Usage
from gateway.streaming.openai_stream import Observation, StreamUsageTracker, with_cost
from gateway.streaming.sse import SSEDecoder, SSEEvent
from gateway.usage.tally import TokenTally


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        "usage": None,
    }
    body.update(extra)
    return json.dumps(body)


USAGE_CHUNK = json.dumps(
    {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [],
        "usage": {
            "prompt_tokens": 12,
            "completion_tokens": 3,
            "total_tokens": 15,
            "prompt_tokens_details": {"cached_tokens": 0},
        },
    }
)


def _observe_all(tracker: StreamUsageTracker, datas: list[str]) -> list[Observation]:
    return [tracker.observe(data) for data in datas]


class _Recorder:
    """Counts one token per character and keeps what it was asked to count."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, text: str) -> int:
        self.texts.append(text)
        return len(text)


def _recording() -> tuple[StreamUsageTracker, _Recorder]:
    recorder = _Recorder()
    return StreamUsageTracker(TokenTally(recorder)), recorder


def _counted_text(tracker: StreamUsageTracker, recorder: _Recorder) -> str:
    """All the text the tracker counted (its estimate is one token per character)."""
    estimate = tracker.estimate_output_tokens()
    text = "".join(recorder.texts)
    assert estimate == TokenCount(len(text))
    return text


def test_stream_with_final_usage_chunk_records_usage_and_marks_it_usage_only() -> None:
    tracker, recorder = _recording()
    datas = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "Hello"}),
        _chunk({"content": " world"}),
        _chunk({}, finish="stop"),
        USAGE_CHUNK,
        "[DONE]",
    ]
    observations = _observe_all(tracker, datas)
    assert [o.usage_only for o in observations] == [False, False, False, False, True, False]
    assert [o.has_content for o in observations] == [False, True, True, False, False, False]
    assert observations[-1].done
    assert tracker.done
    assert tracker.usage == Usage(input_tokens=12, output_tokens=3)
    assert tracker.model == "gpt-4o-mini-2024-07-18"
    assert tracker.finish_reason == "stop"
    assert _counted_text(tracker, recorder) == "Hello world"
    assert tracker.error is None


def test_stream_without_usage_counts_its_text_for_an_estimate() -> None:
    tracker = StreamUsageTracker()  # characters/4 by default
    _observe_all(tracker, [_chunk({"content": "abcdefgh"}), _chunk({}, finish="length"), "[DONE]"])
    assert tracker.usage is None
    assert tracker.finish_reason == "length"
    assert tracker.estimate_output_tokens() == TokenCount(2)


def test_tool_call_deltas_accumulate_name_and_arguments() -> None:
    tracker, recorder = _recording()
    call = {"index": 0, "id": "call_1", "type": "function"}
    _observe_all(
        tracker,
        [
            _chunk(
                {"tool_calls": [{**call, "function": {"name": "get_weather", "arguments": ""}}]}
            ),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
            _chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
            _chunk({}, finish="tool_calls"),
        ],
    )
    assert _counted_text(tracker, recorder) == 'get_weather{"city":"Paris"}'
    assert tracker.finish_reason == "tool_calls"


def test_completions_text_is_accumulated() -> None:
    tracker, recorder = _recording()
    chunk = {"model": "gpt-3.5-turbo-instruct", "choices": [{"text": "Once", "index": 0}]}
    assert tracker.observe(json.dumps(chunk)).has_content
    assert _counted_text(tracker, recorder) == "Once"


def test_usage_on_a_chunk_with_choices_is_recorded_but_not_usage_only() -> None:
    tracker = StreamUsageTracker()
    data = _chunk({}, finish="stop", usage={"prompt_tokens": 5, "completion_tokens": 1})
    observation = tracker.observe(data)
    assert observation.has_usage and not observation.usage_only
    assert tracker.usage == Usage(input_tokens=5, output_tokens=1)


def test_later_usage_replaces_earlier_because_counts_are_cumulative() -> None:
    tracker = StreamUsageTracker()
    tracker.observe(_chunk({"content": "a"}, usage={"prompt_tokens": 5, "completion_tokens": 1}))
    tracker.observe(_chunk({"content": "b"}, usage={"prompt_tokens": 5, "completion_tokens": 2}))
    assert tracker.usage == Usage(input_tokens=5, output_tokens=2)


def test_error_object_is_an_error_event() -> None:
    tracker = StreamUsageTracker()
    error = {"message": "overloaded", "type": "server_error", "code": None}
    observation = tracker.observe(json.dumps({"error": error}))
    assert observation.error and not observation.usage_only
    assert tracker.error == error


def test_sse_event_named_error_is_an_error_even_if_not_json() -> None:
    tracker = StreamUsageTracker()
    assert tracker.observe("upstream exploded", event="error").error
    assert tracker.error == "upstream exploded"


def test_data_that_is_not_a_json_object_is_invalid_not_a_crash() -> None:
    tracker = StreamUsageTracker()
    deep = "[" * 5000 + "]" * 5000  # deeper than the JSON decoder recurses
    for data in ["not json", "{", "[1,2]", "42", "null", '"[DONE]"', "", "<html>", deep]:
        observation = tracker.observe(data)
        assert observation == Observation(invalid=True)
    assert tracker.usage is None and not tracker.done and tracker.error is None


def test_an_object_of_an_unexpected_shape_is_opaque_not_invalid() -> None:
    observation = StreamUsageTracker().observe('{"something": "else"}')
    assert not observation.invalid and not observation.error


def test_wrongly_typed_fields_are_ignored() -> None:
    tracker, recorder = _recording()
    weird = [
        {"model": 5, "choices": "nope", "usage": "many"},
        {"choices": [None, 3, {"delta": "x", "finish_reason": 1}]},
        {"choices": [{"delta": {"content": 7, "tool_calls": [None, {"function": "f"}]}}]},
        {"choices": [], "usage": {"prompt_tokens": "12"}},
    ]
    for chunk in weird:
        observation = tracker.observe(json.dumps(chunk))
        assert not observation.usage_only and not observation.has_content
    assert tracker.usage is None and tracker.model is None
    assert _counted_text(tracker, recorder) == ""


def test_done_sentinel_tolerates_surrounding_whitespace() -> None:
    assert StreamUsageTracker().observe(" [DONE]\n").done


def test_with_cost_adds_cost_as_a_plain_json_number_in_one_sse_event() -> None:
    chunk = json.loads(USAGE_CHUNK)
    encoded = with_cost(chunk, Decimal("0.0000036"))
    assert encoded.startswith(b"data: ") and encoded.endswith(b"\n\n")
    assert b'"cost":0.0000036' in encoded
    (event,) = SSEDecoder().feed(encoded)
    decoded = json.loads(event.data, parse_float=Decimal)
    assert decoded["usage"]["cost"] == Decimal("0.0000036")
    assert decoded["usage"]["prompt_tokens"] == 12
    assert "cost" not in chunk["usage"]  # the caller's chunk is left alone


def test_with_cost_leaves_a_chunk_without_usage_unchanged() -> None:
    (event,) = SSEDecoder().feed(with_cost({"choices": []}, Decimal(1)))
    assert event == SSEEvent(event=None, data='{"choices":[]}')


def test_observation_exposes_the_decoded_chunk_for_re_encoding() -> None:
    observation = StreamUsageTracker().observe(USAGE_CHUNK)
    assert observation.chunk is not None
    assert observation.chunk["usage"]["total_tokens"] == 15
