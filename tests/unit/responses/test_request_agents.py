"""What agents and reasoning-model clients send on the Responses API, translated: namespace
tools flattened, offered built-in tools and style-only fields left out and listed, a
required built-in tool refused, encrypted reasoning carried back to a provider that
takes it."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.responses import reasoning
from gateway.responses.answer import to_response
from gateway.responses.request import Unsupported, to_chat
from gateway.responses.stream import ResponsesStreamWriter

NAMESPACE: dict[str, Any] = {
    "type": "namespace",
    "name": "crm",
    "description": "The customer database.",
    "tools": [
        {
            "type": "function",
            "name": "lookup",
            "description": "Find a customer.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        }
    ],
}


def translate(thinking: bool = False, **body: Any) -> tuple[dict[str, Any], list[str]]:
    ignored: list[str] = []
    chat = to_chat({"model": "m", "input": "Hi", **body}, "p", thinking=thinking, ignored=ignored)
    return chat, ignored


def test_a_namespace_is_flattened_to_its_functions_and_calls_to_them_go_back() -> None:
    chat, ignored = translate(
        tools=[NAMESPACE, {"type": "function", "name": "shell"}],
        input=[
            {"role": "user", "content": "Find Ann."},
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "lookup",
                "namespace": "crm",
                "arguments": '{"q": "Ann"}',
            },
            {"type": "function_call_output", "call_id": "c1", "output": "found"},
        ],
        tool_choice={"type": "function", "name": "lookup", "namespace": "crm"},
    )
    assert ignored == []
    assert chat["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "crm__lookup",
                "description": "[crm: The customer database.] Find a customer.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
            },
        },
        {"type": "function", "function": {"name": "shell"}},
    ]
    assert chat["messages"][1]["tool_calls"][0]["function"]["name"] == "crm__lookup"
    assert chat["tool_choice"] == {"type": "function", "function": {"name": "crm__lookup"}}


def test_a_namespaced_function_named_like_another_tool_is_refused() -> None:
    with pytest.raises(Unsupported) as refused:
        translate(tools=[NAMESPACE, {"type": "function", "name": "crm__lookup"}])
    assert refused.value.param == "tools"


def test_the_answer_names_the_namespace_of_a_call_whole_and_streamed() -> None:
    request = {"model": "m", "input": "Hi", "tools": [NAMESPACE]}
    call = {"id": "c1", "type": "function", "function": {"name": "crm__lookup", "arguments": "{}"}}
    chat = {
        "model": "m",
        "choices": [
            {
                "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                "finish_reason": "tool_calls",
            }
        ],
    }
    (item,) = to_response(chat, request, None, 0)["output"]
    assert (item["name"], item["namespace"]) == ("lookup", "crm")
    writer = ResponsesStreamWriter(request, 0, "m")
    events = writer.start()
    delta = {"tool_calls": [{"index": 0, **call}]}
    events += writer.feed({"choices": [{"delta": delta, "finish_reason": "tool_calls"}]})
    events += writer.finish()
    added = next(e for e in events if e["type"] == "response.output_item.added")
    done = next(e for e in events if e["type"] == "response.function_call_arguments.done")
    assert (added["item"]["name"], added["item"]["namespace"]) == ("lookup", "crm")
    assert done["name"] == "lookup"
    (final,) = events[-1]["response"]["output"]
    assert (final["name"], final["namespace"]) == ("lookup", "crm")


def test_offered_built_in_tools_and_style_fields_are_left_out_and_listed() -> None:
    chat, ignored = translate(
        tools=[{"type": "web_search"}, {"type": "function", "name": "f"}],
        tool_choice="auto",
        text={"verbosity": "low"},
        client_metadata={"session": "s1"},
        include=["reasoning.encrypted_content", "web_search_call.action.sources"],
        reasoning={"effort": "high", "summary": "auto"},
        store=False,
    )
    assert ignored == [
        "tools[web_search]",
        "text.verbosity",
        "client_metadata",
        "include[reasoning.encrypted_content]",
        "include[web_search_call.action.sources]",
        "reasoning.summary",
    ]
    assert chat == {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [{"type": "function", "function": {"name": "f"}}],
        "tool_choice": "auto",
        "reasoning_effort": "high",
    }


def test_with_thinking_the_encrypted_reasoning_and_summary_are_carried() -> None:
    _, ignored = translate(
        thinking=True,
        include=["reasoning.encrypted_content"],
        reasoning={"effort": "low", "summary": "auto"},
    )
    assert ignored == []


def test_only_built_in_tools_offered_sends_no_tools_nor_tool_choice() -> None:
    chat, ignored = translate(tools=[{"type": "web_search_preview"}], tool_choice="auto")
    assert "tools" not in chat and "tool_choice" not in chat
    assert ignored == ["tools[web_search_preview]"]


@pytest.mark.parametrize("kind", ["web_search_preview", "file_search", "code_interpreter"])
def test_a_tool_choice_requiring_a_built_in_tool_is_refused_naming_it(kind: str) -> None:
    with pytest.raises(Unsupported) as refused:
        translate(tools=[{"type": kind}], tool_choice={"type": kind})
    assert refused.value.param == "tool_choice"
    assert f"'{kind}'" in refused.value.message and "'p'" in refused.value.message


def test_reasoning_blocks_round_trip_through_encrypted_content() -> None:
    block = {"type": "thinking", "thinking": "Think.", "signature": "sig-1"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    assert reasoning.decode(reasoning.encode(block)) == block
    assert reasoning.decode(reasoning.encode(redacted)) == redacted
    assert reasoning.decode("gAAAA-openai-native") is None
    assert reasoning.decode("gwr1.not base64!") is None
    items: list[Any] = [
        {"role": "user", "content": "Find Ann."},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "encrypted_content": reasoning.encode(block),
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "found"},
        {
            "type": "reasoning",
            "id": "rs_2",
            "summary": [],
            "encrypted_content": reasoning.encode(redacted),
        },
        {"role": "assistant", "content": "Done."},
        {"type": "reasoning", "id": "rs_3", "summary": [], "encrypted_content": "gAAAA-native"},
    ]
    chat, _ = translate(thinking=True, input=items)
    assert chat["messages"][1]["thinking_blocks"] == [block]
    assert chat["messages"][3] == {
        "role": "assistant",
        "content": "Done.",
        "thinking_blocks": [redacted],
    }
    plain, _ = translate(input=items)  # a provider that takes no blocks: none sent
    assert all("thinking_blocks" not in m for m in plain["messages"])


def test_thinking_blocks_become_reasoning_items_with_what_was_asked() -> None:
    block = {"type": "thinking", "thinking": "Think.", "signature": "sig-1"}
    chat = {
        "model": "m",
        "choices": [
            {
                "message": {"role": "assistant", "content": "Hi.", "thinking_blocks": [block]},
                "finish_reason": "stop",
            }
        ],
    }
    request: dict[str, Any] = {
        "model": "m",
        "input": "Hi",
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    first, second = to_response(chat, request, None, 0)["output"]
    assert first["type"] == "reasoning" and second["type"] == "message"
    assert first["summary"] == [{"type": "summary_text", "text": "Think."}]
    assert reasoning.decode(first["encrypted_content"]) == block
    bare = to_response(chat, {"model": "m", "input": "Hi"}, None, 0)["output"][0]
    assert bare["summary"] == [] and "encrypted_content" not in bare


def test_a_streamed_reasoning_item_carries_summary_deltas_and_the_block() -> None:
    block = {"type": "thinking", "thinking": "Think hard.", "signature": "sig-1"}
    request: dict[str, Any] = {
        "model": "m",
        "input": "Hi",
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    writer = ResponsesStreamWriter(request, 0, "m")
    events = writer.start()
    for delta in (
        {"reasoning_content": "Think "},
        {"reasoning_content": "hard."},
        {"thinking_blocks": [block]},
        {"content": "Hi."},
    ):
        events += writer.feed({"choices": [{"delta": delta, "finish_reason": None}]})
    events += writer.feed({"choices": [{"delta": {}, "finish_reason": "stop"}]})
    events += writer.finish()
    kinds = [e["type"] for e in events]
    assert kinds[2:10] == [
        "response.output_item.added",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
        "response.output_item.done",
        "response.output_item.added",
    ]
    done = events[8]["item"]
    assert done["summary"] == [{"type": "summary_text", "text": "Think hard."}]
    assert reasoning.decode(done["encrypted_content"]) == block
    final = events[-1]["response"]["output"]
    assert [i["type"] for i in final] == ["reasoning", "message"]


def test_a_chat_servers_bare_reasoning_text_is_a_reasoning_item_without_a_block() -> None:
    chat = {
        "model": "m",
        "choices": [
            {
                "message": {"role": "assistant", "content": "4", "reasoning_content": "2+2."},
                "finish_reason": "stop",
            }
        ],
    }
    request: dict[str, Any] = {
        "model": "m",
        "input": "Hi",
        "include": ["reasoning.encrypted_content"],
        "reasoning": {"effort": "low", "summary": "auto"},
    }
    thought, message = to_response(chat, request, None, 0)["output"]
    assert thought["summary"] == [{"type": "summary_text", "text": "2+2."}]
    assert "encrypted_content" not in thought  # nothing signed to carry back
    assert message["content"][0]["text"] == "4"
