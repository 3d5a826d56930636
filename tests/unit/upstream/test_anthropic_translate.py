"""OpenAI Chat Completions <-> Anthropic Messages translation (pure, no HTTP)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.domain.usage import Usage
from gateway.upstream.anthropic_stream import StreamTranslator
from gateway.upstream.anthropic_translate import (
    TranslationError,
    from_messages_response,
    map_error,
    to_messages_request,
    usage_from_anthropic,
)

MODEL = "claude-sonnet-4-5"


def translate(**body: Any) -> dict[str, Any]:
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return to_messages_request(body, MODEL, 1024)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


# --- request -------------------------------------------------------------------------------


def test_system_goes_top_level_and_turns_alternate() -> None:
    out = translate(
        model="smart-chat",
        messages=[
            {"role": "system", "content": "Be terse."},
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "Hi."},
            {"role": "user", "content": [{"type": "text", "text": "How are you?"}]},
        ],
    )
    assert out["model"] == MODEL
    assert out["system"] == "Be terse."
    assert out["messages"] == [
        {"role": "user", "content": [text("Hello")]},
        {"role": "assistant", "content": [text("Hi.")]},
        {"role": "user", "content": [text("How are you?")]},
    ]


def test_several_system_and_developer_messages_become_system_blocks() -> None:
    out = translate(
        messages=[
            {"role": "system", "content": "One."},
            {"role": "developer", "content": [{"type": "text", "text": "Two."}]},
            {"role": "user", "content": "go"},
        ]
    )
    assert out["system"] == [text("One."), text("Two.")]


def test_consecutive_same_role_messages_merge() -> None:
    out = translate(
        messages=[
            {"role": "user", "content": "a"},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": "c"},
            {"role": "assistant", "content": "d"},
        ]
    )
    assert out["messages"] == [
        {"role": "user", "content": [text("a"), text("b")]},
        {"role": "assistant", "content": [text("c"), text("d")]},
    ]


def test_only_system_messages_is_a_translation_error() -> None:
    with pytest.raises(TranslationError) as info:
        translate(messages=[{"role": "system", "content": "x"}])
    assert info.value.param == "messages"


def test_unknown_role_is_a_translation_error() -> None:
    with pytest.raises(TranslationError) as info:
        translate(messages=[{"role": "function", "content": "x"}])
    assert info.value.param == "messages[0].role"


def test_data_url_image_becomes_base64_source() -> None:
    part = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    out = translate(messages=[{"role": "user", "content": [{"type": "text", "text": "?"}, part]}])
    assert out["messages"][0]["content"] == [
        text("?"),
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
        },
    ]


def test_http_image_url_becomes_url_source() -> None:
    part = {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}
    out = translate(messages=[{"role": "user", "content": [part]}])
    assert out["messages"][0]["content"] == [
        {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
    ]


@pytest.mark.parametrize(
    "url", ["ftp://example.com/a.png", "data:image/png,raw", "data:image/tiff;base64,AA=="]
)
def test_unusable_image_url_is_a_translation_error(url: str) -> None:
    part = {"type": "image_url", "image_url": {"url": url}}
    with pytest.raises(TranslationError) as info:
        translate(messages=[{"role": "user", "content": [part]}])
    assert info.value.param == "messages[0].content[0].image_url"


def test_function_tools_become_input_schema_tools() -> None:
    params = {"type": "object", "properties": {"city": {"type": "string"}}}
    out = translate(
        tools=[
            {
                "type": "function",
                "function": {"name": "weather", "description": "Get it", "parameters": params},
            },
            {"type": "function", "function": {"name": "now"}},
        ]
    )
    assert out["tools"] == [
        {"name": "weather", "description": "Get it", "input_schema": params},
        {"name": "now", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert "tool_choice" not in out


TOOLS = [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}}]


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        (
            {"type": "function", "function": {"name": "weather"}},
            {"type": "tool", "name": "weather"},
        ),
    ],
)
def test_tool_choice_maps_to_anthropic(choice: Any, expected: dict[str, Any]) -> None:
    assert translate(tools=TOOLS, tool_choice=choice)["tool_choice"] == expected


def test_parallel_tool_calls_false_disables_parallel_tool_use() -> None:
    out = translate(tools=TOOLS, parallel_tool_calls=False)
    assert out["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}


def test_non_function_tool_is_a_translation_error() -> None:
    with pytest.raises(TranslationError) as info:
        translate(tools=[{"type": "code_interpreter"}])
    assert info.value.param == "tools[0].type"


def test_tool_calls_and_tool_results_round_trip() -> None:
    out = translate(
        messages=[
            {"role": "user", "content": "Weather in Paris and Rome?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    },
                    {
                        "id": "call_2",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Rome"}'},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
            {"role": "tool", "tool_call_id": "call_2", "content": [text("rain")]},
            {"role": "user", "content": "Thanks"},
        ]
    )
    assert out["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
            {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Rome"}},
        ],
    }
    assert out["messages"][2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": [text("rain")]},
            text("Thanks"),
        ],
    }
    assert len(out["messages"]) == 3


def test_empty_tool_arguments_mean_no_input() -> None:
    call = {"id": "c", "type": "function", "function": {"name": "now", "arguments": ""}}
    out = translate(
        messages=[
            {"role": "user", "content": "time?"},
            {"role": "assistant", "content": "", "tool_calls": [call]},
        ]
    )
    assert out["messages"][1]["content"] == [
        {"type": "tool_use", "id": "c", "name": "now", "input": {}}
    ]


@pytest.mark.parametrize("arguments", ['{"city": ', "[1, 2]"])
def test_bad_tool_arguments_are_a_translation_error(arguments: str) -> None:
    call = {"id": "c", "type": "function", "function": {"name": "f", "arguments": arguments}}
    with pytest.raises(TranslationError) as info:
        translate(
            messages=[
                {"role": "user", "content": "x"},
                {"role": "assistant", "tool_calls": [call]},
            ]
        )
    assert info.value.param == "messages[1].tool_calls[0].function.arguments"
    assert isinstance(info.value, ValueError)


def test_tool_message_without_call_id_is_a_translation_error() -> None:
    with pytest.raises(TranslationError) as info:
        translate(messages=[{"role": "tool", "content": "x"}])
    assert info.value.param == "messages[0].tool_call_id"


def test_max_tokens_defaults_to_the_configured_default() -> None:
    assert translate()["max_tokens"] == 1024


def test_explicit_max_tokens_and_max_completion_tokens_win() -> None:
    assert translate(max_tokens=50)["max_tokens"] == 50
    assert translate(max_tokens=50, max_completion_tokens=70)["max_tokens"] == 70


@pytest.mark.parametrize("value", [0, -3, "10", True])
def test_bad_max_tokens_is_a_translation_error(value: Any) -> None:
    with pytest.raises(TranslationError) as info:
        translate(max_tokens=value)
    assert info.value.param == "max_tokens"


def test_stop_string_and_list_become_stop_sequences() -> None:
    assert translate(stop="END")["stop_sequences"] == ["END"]
    assert translate(stop=["a", "b"])["stop_sequences"] == ["a", "b"]
    assert "stop_sequences" not in translate()


def test_sampling_stream_and_user_pass_through() -> None:
    out = translate(temperature=0.3, top_p=0.9, stream=True, user="u-42")
    assert out["temperature"] == 0.3
    assert out["top_p"] == 0.9
    assert out["stream"] is True
    assert out["metadata"] == {"user_id": "u-42"}


def test_openai_only_fields_are_dropped() -> None:
    out = translate(
        presence_penalty=0.5,
        frequency_penalty=0.1,
        logit_bias={"1": 2},
        stream_options={"include_usage": True},
        n=1,
    )
    assert set(out) == {"model", "max_tokens", "messages"}


def test_n_above_one_is_a_translation_error() -> None:
    with pytest.raises(TranslationError) as info:
        translate(n=2)
    assert info.value.param == "n"


# --- response and usage --------------------------------------------------------------------


def anthropic_message(content: list[dict[str, Any]], stop_reason: str) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": content,
        "stop_reason": stop_reason,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def test_text_response_becomes_chat_completion() -> None:
    resp = anthropic_message([text("Hello "), text("there")], "end_turn")
    out = from_messages_response(resp, created=1700000000)
    assert out["id"] == "msg_01"
    assert out["object"] == "chat.completion"
    assert out["created"] == 1700000000
    assert out["model"] == "claude-sonnet-4-5-20250929"
    choice = out["choices"][0]
    assert choice["index"] == 0
    assert choice["message"]["role"] == "assistant"
    assert choice["message"]["content"] == "Hello there"
    assert "tool_calls" not in choice["message"]
    assert choice["finish_reason"] == "stop"
    assert out["usage"] == {
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "total_tokens": 15,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def test_tool_use_response_becomes_tool_calls_with_null_content() -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}}
    out = from_messages_response(anthropic_message([block], "tool_use"), created=1)
    message = out["choices"][0]["message"]
    assert message["content"] is None
    assert message["tool_calls"] == [
        {
            "id": "toolu_1",
            "type": "function",
            "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
        }
    ]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert out["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize(
    ("stop_reason", "finish"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("max_tokens", "length"),
        ("tool_use", "tool_calls"),
        ("refusal", "content_filter"),
    ],
)
def test_stop_reason_maps_to_finish_reason(stop_reason: str, finish: str) -> None:
    out = from_messages_response(anthropic_message([text("x")], stop_reason), created=1)
    assert out["choices"][0]["finish_reason"] == finish


def test_usage_counts_cache_tokens_into_total_input() -> None:
    usage = usage_from_anthropic(
        {
            "input_tokens": 20,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 300,
            "output_tokens": 7,
        }
    )
    assert usage == Usage(
        input_tokens=1320, output_tokens=7, cache_read_tokens=1000, cache_write_tokens=300
    )


def test_response_prompt_tokens_include_cache_tokens() -> None:
    resp = anthropic_message([text("x")], "end_turn")
    resp["usage"] = {
        "input_tokens": 20,
        "cache_read_input_tokens": 1000,
        "cache_creation_input_tokens": None,
        "output_tokens": 7,
    }
    out = from_messages_response(resp, created=1)
    assert out["usage"] == {
        "prompt_tokens": 1020,
        "completion_tokens": 7,
        "total_tokens": 1027,
        "prompt_tokens_details": {"cached_tokens": 1000},
    }


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


# --- errors --------------------------------------------------------------------------------


def anthropic_error(kind: str, message: str) -> bytes:
    return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()


@pytest.mark.parametrize(
    ("status", "kind", "openai_type"),
    [
        (400, "invalid_request_error", "invalid_request_error"),
        (401, "authentication_error", "authentication_error"),
        (403, "permission_error", "permission_error"),
        (404, "not_found_error", "invalid_request_error"),
        (413, "request_too_large", "invalid_request_error"),
        (429, "rate_limit_error", "rate_limit_error"),
        (500, "api_error", "api_error"),
        (529, "overloaded_error", "api_error"),
    ],
)
def test_anthropic_error_maps_to_openai_envelope(status: int, kind: str, openai_type: str) -> None:
    client_status, envelope = map_error(status, anthropic_error(kind, "details here"))
    assert client_status == status
    assert envelope == {
        "error": {"message": "details here", "type": openai_type, "param": None, "code": kind}
    }


def test_unparseable_error_body_gets_a_generic_message() -> None:
    client_status, envelope = map_error(502, b"<html>Bad Gateway</html>")
    assert client_status == 502
    assert envelope["error"]["type"] == "api_error"
    assert envelope["error"]["code"] == "upstream_error"
    assert "502" in envelope["error"]["message"]
    assert "html" not in envelope["error"]["message"]


def test_error_body_on_success_status_takes_status_from_its_type() -> None:
    client_status, envelope = map_error(200, anthropic_error("rate_limit_error", "slow down"))
    assert client_status == 429
    assert envelope["error"]["type"] == "rate_limit_error"
