"""Anthropic SSE events translated into OpenAI chat.completion.chunk dicts (pure)."""

from __future__ import annotations

from typing import Any

from gateway.domain.usage import Usage
from gateway.upstream.anthropic.stream import StreamTranslator
from tests.support.openai_schema import assert_valid

MODEL = "claude-sonnet-4-5"


# --- streaming -----------------------------------------------------------------------------

TEXT_STREAM: list[tuple[str, dict[str, Any]]] = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_stream",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [],
                "stop_reason": None,
                "usage": {
                    "input_tokens": 25,
                    "cache_read_input_tokens": 100,
                    "cache_creation_input_tokens": 0,
                    "output_tokens": 1,
                },
            },
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    ("ping", {"type": "ping"}),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
    ),
    (
        "content_block_delta",
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "lo"}},
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": 15},
        },
    ),
    ("message_stop", {"type": "message_stop"}),
]


def run(stream: list[tuple[str, dict[str, Any]]]) -> tuple[StreamTranslator, list[dict[str, Any]]]:
    translator = StreamTranslator(MODEL, created=1700000000)
    chunks = [chunk for event, data in stream for chunk in translator.feed(event, data)]
    return translator, chunks


def test_text_stream_becomes_role_content_and_finish_chunks() -> None:
    translator, chunks = run(TEXT_STREAM)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "Hel"},
        {"content": "lo"},
        {},
    ]
    assert [c["choices"][0]["finish_reason"] for c in chunks] == [None, None, None, "stop"]
    for chunk in chunks:
        assert chunk["id"] == "msg_stream"
        assert chunk["object"] == "chat.completion.chunk"
        assert chunk["created"] == 1700000000
        assert chunk["model"] == "claude-sonnet-4-5-20250929"
    assert translator.done
    assert translator.error is None


def test_stream_usage_merges_start_and_final_delta() -> None:
    translator, _ = run(TEXT_STREAM)
    assert translator.usage == Usage(
        input_tokens=125, output_tokens=15, cache_read_tokens=100, cache_write_tokens=0
    )
    chunk = translator.usage_chunk()
    assert chunk["choices"] == []
    assert chunk["object"] == "chat.completion.chunk"
    assert chunk["usage"] == {
        "prompt_tokens": 125,
        "completion_tokens": 15,
        "total_tokens": 140,
        "prompt_tokens_details": {"cached_tokens": 100},
    }


def test_input_fields_on_message_delta_replace_the_start_ones() -> None:
    translator, _ = run(TEXT_STREAM[:-2])
    translator.feed(
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn"},
            "usage": {"input_tokens": 30, "cache_creation_input_tokens": 5, "output_tokens": 9},
        },
    )
    assert translator.usage == Usage(
        input_tokens=135, output_tokens=9, cache_read_tokens=100, cache_write_tokens=5
    )
    assert not translator.done


def test_usage_is_none_before_any_usage_arrives() -> None:
    translator = StreamTranslator(MODEL, created=1)
    assert translator.usage is None
    assert translator.usage_chunk()["usage"]["total_tokens"] == 0


TOOL_STREAM: list[tuple[str, dict[str, Any]]] = [
    (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_tool",
                "model": "claude-sonnet-4-5-20250929",
                "usage": {"input_tokens": 400, "output_tokens": 1},
            },
        },
    ),
    (
        "content_block_start",
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "Checking."},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {}},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": ""},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"city": "Pa'},
        },
    ),
    (
        "content_block_delta",
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": 'ris"}'},
        },
    ),
    ("content_block_stop", {"type": "content_block_stop", "index": 1}),
    (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use"},
            "usage": {"output_tokens": 40},
        },
    ),
    ("message_stop", {"type": "message_stop"}),
]


def test_tool_stream_becomes_openai_tool_call_deltas() -> None:
    translator, chunks = run(TOOL_STREAM)
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas == [
        {"role": "assistant", "content": ""},
        {"content": "Checking."},
        {
            "tool_calls": [
                {
                    "index": 0,
                    "id": "toolu_9",
                    "type": "function",
                    "function": {"name": "weather", "arguments": ""},
                }
            ]
        },
        {"tool_calls": [{"index": 0, "function": {"arguments": '{"city": "Pa'}}]},
        {"tool_calls": [{"index": 0, "function": {"arguments": 'ris"}'}}]},
        {},
    ]
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert translator.usage == Usage(input_tokens=400, output_tokens=40)
    assert translator.done


def test_tool_call_indexes_count_tool_blocks_only() -> None:
    translator, _ = run(TOOL_STREAM[:1])
    block = {"type": "tool_use", "id": "toolu_b", "name": "f", "input": {}}
    chunks = translator.feed(
        "content_block_start", {"type": "content_block_start", "index": 3, "content_block": block}
    )
    assert chunks[0]["choices"][0]["delta"]["tool_calls"][0]["index"] == 0
    delta = {"type": "input_json_delta", "partial_json": "{}"}
    chunks = translator.feed("content_block_delta", {"index": 3, "delta": delta})
    assert chunks[0]["choices"][0]["delta"]["tool_calls"] == [
        {"index": 0, "function": {"arguments": "{}"}}
    ]


def test_event_name_falls_back_to_data_type() -> None:
    translator, chunks = run([("", data) for _, data in TEXT_STREAM])
    assert len(chunks) == 4
    assert translator.done


def test_error_event_sets_openai_error_envelope() -> None:
    translator, chunks = run(TEXT_STREAM[:3])
    out = translator.feed(
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    assert out == []
    assert translator.error == {
        "error": {
            "message": "Overloaded",
            "type": "api_error",
            "code": "overloaded_error",
            "param": None,
        }
    }
    assert translator.error_status == 529
    assert not translator.done
    assert len(chunks) == 1


def test_translated_chunks_and_the_usage_chunk_conform_to_openais_schema() -> None:
    for stream in (TEXT_STREAM, TOOL_STREAM):
        translator, chunks = run(stream)
        assert chunks
        for chunk in [*chunks, translator.usage_chunk()]:
            assert_valid(chunk, "CreateChatCompletionStreamResponse")
