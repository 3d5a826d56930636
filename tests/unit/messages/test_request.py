"""A Messages body as a Chat Completions body: what is translated, left out, refused."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.messages.request import Untranslatable, to_chat


def _chat(body: dict[str, Any], reasoning: bool = False) -> dict[str, Any]:
    return to_chat({"model": "m", "max_tokens": 100, **body}, reasoning=reasoning).body


def test_system_string_and_blocks_become_one_system_message() -> None:
    hello = [{"role": "user", "content": "Hi"}]
    assert _chat({"system": "Be brief.", "messages": hello})["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
    ]
    blocks = [
        {"type": "text", "text": "One.", "cache_control": {"type": "ephemeral"}},
        {"type": "text", "text": "Two."},
    ]
    assert _chat({"system": blocks, "messages": hello})["messages"][0] == {
        "role": "system",
        "content": "One.\n\nTwo.",
    }


def test_a_system_message_mid_conversation_stays_in_place() -> None:
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "system", "content": [{"type": "text", "text": "Now be terse."}]},
        {"role": "assistant", "content": "Hello."},
    ]
    assert [m["role"] for m in _chat({"messages": messages})["messages"]] == [
        "user",
        "system",
        "assistant",
    ]


def test_sampling_limits_and_stops_keep_their_meaning() -> None:
    chat = _chat(
        {
            "messages": [{"role": "user", "content": "Hi"}],
            "temperature": 0.3,
            "top_p": 0.9,
            "stop_sequences": ["END"],
            "stream": True,
            "metadata": {"user_id": "u"},
        }
    )
    assert chat == {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "temperature": 0.3,
        "top_p": 0.9,
        "stop": ["END"],
        "stream": True,
        "max_tokens": 100,
    }


def test_images_become_image_url_parts() -> None:
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AA"}}
    linked = {"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}
    content = [{"type": "text", "text": "What?"}, image, linked]
    (message,) = _chat({"messages": [{"role": "user", "content": content}]})["messages"]
    assert message["content"] == [
        {"type": "text", "text": "What?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
        {"type": "image_url", "image_url": {"url": "https://x/y.png"}},
    ]


def test_tool_use_and_tool_result_become_tool_calls_and_tool_messages() -> None:
    messages = [
        {"role": "user", "content": "Look x up."},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "Looking."},
                {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_2",
                    "content": [{"type": "text", "text": "no such file"}],
                    "is_error": True,
                },
                {"type": "text", "text": "Go on."},
            ],
        },
    ]
    assert _chat({"messages": messages})["messages"][1:] == [
        {
            "role": "assistant",
            "content": "Looking.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "found"},
        {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: no such file"},
        {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    ]


TOOL = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}
SEARCH = {"type": "web_search_20250305", "name": "web_search"}


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ({"type": "auto"}, "auto"),
        ({"type": "any"}, "required"),
        ({"type": "none"}, "none"),
        ({"type": "tool", "name": "lookup"}, {"type": "function", "function": {"name": "lookup"}}),
    ],
)
def test_tools_and_tool_choice(choice: dict[str, Any], expected: Any) -> None:
    chat = _chat(
        {"messages": [{"role": "user", "content": "Hi"}], "tools": [TOOL], "tool_choice": choice}
    )
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "lookup",
                "parameters": {"type": "object"},
                "description": "Look up.",
            },
        }
    ]
    assert chat["tool_choice"] == expected
    assert "parallel_tool_calls" not in chat


def test_disable_parallel_tool_use_is_parallel_tool_calls_false() -> None:
    choice = {"type": "auto", "disable_parallel_tool_use": True}
    chat = _chat(
        {"messages": [{"role": "user", "content": "Hi"}], "tools": [TOOL], "tool_choice": choice}
    )
    assert chat["parallel_tool_calls"] is False


def test_an_offered_server_tool_is_left_out_and_listed() -> None:
    translated = to_chat(
        {"model": "m", "messages": [{"role": "user", "content": "Hi"}], "tools": [TOOL, SEARCH]},
        reasoning=False,
    )
    assert [t["function"]["name"] for t in translated.body["tools"]] == ["lookup"]
    assert translated.ignored == ["tools[web_search_20250305]"]


def test_output_config_effort_and_format() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "low", "format": {"type": "json_schema", "schema": {}}},
    }
    chat = to_chat(body, reasoning=True).body
    assert chat["reasoning_effort"] == "low"  # effort says how hard; thinking only that
    assert chat["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "output", "schema": {}, "strict": True},
    }
    assert to_chat(body, reasoning=False).ignored == ["thinking", "output_config.effort"]
    with pytest.raises(Untranslatable) as refused:
        to_chat({**body, "output_config": {"task_budget": 5}}, reasoning=False)
    assert refused.value.param == "output_config.task_budget"


def test_context_management_is_left_out_and_listed() -> None:
    translated = to_chat(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "Hi"}],
            "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
        },
        reasoning=False,
    )
    assert "context_management" not in translated.body
    assert translated.ignored == ["context_management"]


def test_a_required_server_tool_is_refused_by_name() -> None:
    body = {"messages": [{"role": "user", "content": "Hi"}], "tools": [SEARCH]}
    with pytest.raises(Untranslatable) as named:
        _chat({**body, "tool_choice": {"type": "tool", "name": "web_search"}})
    assert named.value.param == "tool_choice" and "web_search" in named.value.message
    with pytest.raises(Untranslatable):
        _chat({**body, "tool_choice": {"type": "any"}})


@pytest.mark.parametrize(
    ("budget", "effort"), [(1024, "low"), (4096, "low"), (8000, "medium"), (32000, "high")]
)
def test_thinking_becomes_reasoning_effort_where_the_model_offers_it(
    budget: int, effort: str
) -> None:
    thinking = {"type": "enabled", "budget_tokens": budget}
    chat = _chat({"messages": [{"role": "user", "content": "Hi"}], "thinking": thinking}, True)
    assert chat["reasoning_effort"] == effort
    assert chat["max_completion_tokens"] == 100 and "max_tokens" not in chat


def test_thinking_for_a_model_without_reasoning_is_left_out_and_listed() -> None:
    translated = to_chat(
        {
            "model": "m",
            "messages": [{"role": "user", "content": "Hi"}],
            "thinking": {"type": "enabled", "budget_tokens": 2048},
        },
        reasoning=False,
    )
    assert "reasoning_effort" not in translated.body
    assert translated.ignored == ["thinking"]
    disabled = to_chat(
        {"model": "m", "messages": [], "thinking": {"type": "disabled"}}, reasoning=False
    )
    assert disabled.ignored == []


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"top_k": 5}, "top_k"),
        ({"container": "c-1"}, "container"),
        ({"mcp_servers": [{"url": "x"}]}, "mcp_servers"),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
            "messages[0].content[0]",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "t",
                                "content": [{"type": "image", "source": {}}],
                            }
                        ],
                    }
                ]
            },
            "messages[0].content[0].content[0]",
        ),
        ({"system": [{"type": "image", "source": {}}]}, "system[0]"),
    ],
)
def test_what_has_no_counterpart_is_refused_naming_it(body: dict[str, Any], param: str) -> None:
    base: dict[str, Any] = {"messages": [{"role": "user", "content": "Hi"}]}
    with pytest.raises(Untranslatable) as refused:
        _chat({**base, **body})
    assert refused.value.param == param


def test_earlier_thinking_blocks_go_back_only_to_providers_that_take_them() -> None:
    thought = {"type": "thinking", "thinking": "hm", "signature": "s"}
    messages = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [thought, {"type": "text", "text": "Hello."}]},
    ]
    body = {"model": "m", "messages": messages}
    kept = to_chat(body, reasoning=True, thinking_blocks=True).body["messages"][1]
    assert kept == {"role": "assistant", "content": "Hello.", "thinking_blocks": [thought]}
    dropped = to_chat(body, reasoning=True).body["messages"][1]
    assert dropped == {"role": "assistant", "content": "Hello."}
