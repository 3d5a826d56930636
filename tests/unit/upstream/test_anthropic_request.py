"""OpenAI chat requests translated to the Anthropic Messages API (pure)."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.upstream.anthropic.translate import (
    TranslationError,
    to_messages_request,
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


def test_openai_only_fields_at_their_defaults_are_dropped() -> None:
    out = translate(
        presence_penalty=0,
        frequency_penalty=0.0,
        logit_bias={},
        logprobs=False,
        stream_options={"include_usage": True},
        n=1,
    )
    assert set(out) == {"model", "max_tokens", "messages"}


def test_n_above_one_is_a_translation_error() -> None:
    with pytest.raises(TranslationError) as info:
        translate(n=2)
    assert info.value.param == "n"
