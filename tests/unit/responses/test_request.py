"""A Responses request as a Chat Completions body: translated, refused, or dropped."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.responses.request import Unsupported, to_chat


def chat(**body: Any) -> dict[str, Any]:
    return to_chat({"model": "m", **body}, "compat")


def test_a_string_input_and_instructions_become_system_and_user_messages() -> None:
    assert chat(input="Hi", instructions="Be brief.") == {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
        ],
    }


def test_items_become_messages_with_tool_calls_and_results() -> None:
    body = chat(
        input=[
            {"role": "developer", "content": [{"type": "input_text", "text": "Rules."}]},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is this?"},
                    {"type": "input_image", "image_url": "https://x/y.png", "detail": "low"},
                ],
            },
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
            },
            {"type": "function_call", "call_id": "c1", "name": "a", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "b", "arguments": '{"x":1}'},
            {"type": "reasoning", "id": "rs_1", "summary": []},
            {"type": "function_call_output", "call_id": "c1", "output": "one"},
            {
                "type": "function_call_output",
                "call_id": "c2",
                "output": [{"type": "input_text", "text": "two"}],
            },
            {"type": "function_call", "call_id": "c3", "name": "a", "arguments": "{}"},
        ]
    )
    assert body["messages"] == [
        {"role": "system", "content": "Rules."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "image_url", "image_url": {"url": "https://x/y.png", "detail": "low"}},
            ],
        },
        {
            "role": "assistant",
            "content": "Let me look.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "b", "arguments": '{"x":1}'}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c3", "type": "function", "function": {"name": "a", "arguments": "{}"}}
            ],
        },
    ]


def test_tools_choice_format_and_sampling_are_translated() -> None:
    body = chat(
        input="Hi",
        tools=[{"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": True}],
        tool_choice={"type": "function", "name": "f"},
        text={"format": {"type": "json_schema", "name": "g", "schema": {"type": "object"}}},
        max_output_tokens=99,
        temperature=0.5,
        top_p=0.8,
        parallel_tool_calls=False,
        reasoning={"effort": "low", "summary": "auto"},
        metadata={"a": "b"},
        store=False,
        include=[],
        stream=True,
        stream_options={"include_obfuscation": False},
        top_k=5,  # not the Responses API's: passed on, as chat passes it
    )
    assert body == {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {"name": "f", "parameters": {"type": "object"}, "strict": True},
            }
        ],
        "tool_choice": {"type": "function", "function": {"name": "f"}},
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "g", "schema": {"type": "object"}},
        },
        "max_tokens": 99,
        "temperature": 0.5,
        "top_p": 0.8,
        "parallel_tool_calls": False,
        "reasoning_effort": "low",
        "top_k": 5,
    }
    assert chat(input="x", text={"format": {"type": "json_object"}})["response_format"] == {
        "type": "json_object"
    }
    assert "response_format" not in chat(input="x", text={"format": {"type": "text"}})


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"tools": [{"type": "custom", "name": "patch"}]}, "tools[0]"),
        (
            {"tools": [{"type": "namespace", "name": "n", "tools": [{"type": "custom"}]}]},
            "tools[0].tools[0]",
        ),
        ({"tools": [{"type": "web_search"}], "tool_choice": "required"}, "tool_choice"),
        ({"tool_choice": {"type": "file_search"}}, "tool_choice"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"conversation": "conv_1"}, "conversation"),
        ({"background": True}, "background"),
        ({"store": True}, "store"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt"),
        ({"include": ["message.output_text.logprobs"]}, "include"),
        ({"truncation": "auto"}, "truncation"),
        ({"top_logprobs": 3}, "top_logprobs"),
        ({"text": {"format": {"type": "grammar"}}}, "text.format"),
        ({"input": [{"type": "item_reference", "id": "x"}]}, "input[0].type"),
        ({"input": [{"role": "user", "content": [{"type": "input_file"}]}]}, "input[0].content[0]"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "file_id": "f"}]}]},
            "input[0].content[0]",
        ),
        ({"input": [{"role": "critic", "content": "x"}]}, "input[0].role"),
        ({"input": None}, "input"),
    ],
)
def test_what_has_no_chat_counterpart_is_refused_naming_it(
    body: dict[str, Any], param: str
) -> None:
    with pytest.raises(Unsupported) as refused:
        chat(**{"input": "Hi", **body})
    assert refused.value.param == param
    assert refused.value.message


def test_refusals_of_state_name_the_provider_and_what_to_do() -> None:
    with pytest.raises(Unsupported) as refused:
        chat(input="Hi", previous_response_id="resp_1")
    assert "'compat'" in refused.value.message
    assert "whole conversation in 'input'" in refused.value.message


def test_defaults_of_refused_fields_pass() -> None:
    body = chat(
        input="Hi",
        background=False,
        store=False,
        include=[],
        truncation="disabled",
        top_logprobs=0,
        previous_response_id=None,
        prompt=None,
    )
    assert body == {"model": "m", "messages": [{"role": "user", "content": "Hi"}]}
