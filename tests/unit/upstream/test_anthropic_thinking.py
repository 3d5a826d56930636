"""reasoning_effort as Anthropic's extended thinking: budgets, when thinking is left out
(and listed), thinking blocks in answers and streams and sent back."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.errors import TranslationError
from gateway.upstream.anthropic.stream import StreamTranslator
from gateway.upstream.anthropic.translate import from_messages_response, translate_request

MODEL = "claude-sonnet-4-5"
BLOCK = {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"}
LOOKUP = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
CALL = {"id": "toolu_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}


def translate(max_tokens: int = 8192, **body: Any) -> tuple[dict[str, Any], tuple[str, ...]]:
    body.setdefault("messages", [{"role": "user", "content": "What is 2+2?"}])
    request = translate_request(body, MODEL, max_tokens)
    return request.payload, request.ignored


@pytest.mark.parametrize(
    ("effort", "budget"), [("minimal", 1024), ("low", 2048), ("medium", 4096), ("high", 4096)]
)
def test_an_effort_is_a_thinking_budget_of_at_most_half_the_max_tokens(
    effort: str, budget: int
) -> None:
    out, ignored = translate(reasoning_effort=effort)
    assert out["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert ignored == ()


def test_what_reasoning_model_clients_send_is_taken() -> None:
    out, ignored = translate(
        messages=[
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "What is 2+2?"},
        ],
        reasoning_effort="high",
        max_completion_tokens=20000,
    )
    assert out["system"] == "Be brief."
    assert out["max_tokens"] == 20000
    assert out["thinking"] == {"type": "enabled", "budget_tokens": 10000}
    assert ignored == ()


def test_none_sends_no_thinking_and_an_unknown_effort_is_refused() -> None:
    assert "thinking" not in translate(reasoning_effort="none")[0]
    with pytest.raises(TranslationError) as refused:
        translate(reasoning_effort="extreme")
    assert refused.value.param == "reasoning_effort"


@pytest.mark.parametrize(
    "body",
    [
        {"tools": LOOKUP, "tool_choice": "required"},
        {"tools": LOOKUP, "tool_choice": {"type": "function", "function": {"name": "lookup"}}},
        {"response_format": {"type": "json_object"}},
    ],
)
def test_a_forced_tool_leaves_thinking_out_and_lists_it(body: dict[str, Any]) -> None:
    out, ignored = translate(reasoning_effort="low", **body)
    assert "thinking" not in out and ignored == ("reasoning_effort",)


def test_too_few_max_tokens_leave_thinking_out_and_list_it() -> None:
    out, ignored = translate(max_tokens=1024, reasoning_effort="low")
    assert "thinking" not in out and ignored == ("reasoning_effort",)


def test_sampling_anthropic_refuses_beside_thinking_is_left_out_and_listed() -> None:
    out, ignored = translate(reasoning_effort="low", temperature=0.2, top_p=0.5)
    assert "temperature" not in out and "top_p" not in out
    assert ignored == ("temperature", "top_p")
    out, ignored = translate(reasoning_effort="low", temperature=1, top_p=0.97)
    assert (out["temperature"], out["top_p"], ignored) == (1, 0.97, ())


def test_verbosity_is_left_out_and_listed() -> None:
    out, ignored = translate(verbosity="low")
    assert "verbosity" not in out and ignored == ("verbosity",)


def _loop(blocks: list[Any] | None) -> list[dict[str, Any]]:
    assistant: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [CALL]}
    if blocks is not None:
        assistant["thinking_blocks"] = blocks
    return [
        {"role": "user", "content": "Look x up."},
        assistant,
        {"role": "tool", "tool_call_id": "toolu_1", "content": "ex"},
    ]


def test_a_tool_loop_sends_its_thinking_block_back_first() -> None:
    out, ignored = translate(reasoning_effort="low", tools=LOOKUP, messages=_loop([BLOCK]))
    assert out["messages"][1]["content"][0] == BLOCK
    assert out["messages"][1]["content"][1]["type"] == "tool_use"
    assert "thinking" in out and ignored == ()


def test_a_tool_loop_without_its_thinking_block_leaves_thinking_out() -> None:
    out, ignored = translate(reasoning_effort="low", tools=LOOKUP, messages=_loop(None))
    assert "thinking" not in out and ignored == ("reasoning_effort",)


def test_without_thinking_earlier_thinking_blocks_are_not_sent() -> None:
    out, _ = translate(tools=LOOKUP, messages=_loop([BLOCK]))
    assert [b["type"] for b in out["messages"][1]["content"]] == ["tool_use"]


def test_a_malformed_thinking_block_is_refused_naming_it() -> None:
    with pytest.raises(TranslationError) as refused:
        translate(tools=LOOKUP, messages=_loop([{"type": "thinking", "thinking": "x"}]))
    assert refused.value.param == "messages[1].thinking_blocks[0]"


def test_an_answer_carries_its_thinking_blocks() -> None:
    answer = from_messages_response(
        {
            "id": "msg_1",
            "model": MODEL,
            "content": [BLOCK, {"type": "text", "text": "4."}],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": 3, "output_tokens": 5},
        },
        1,
    )
    message = answer["choices"][0]["message"]
    assert message["content"] == "4."
    assert message["reasoning_content"] == "Let me think."
    assert message["thinking_blocks"] == [BLOCK]


def test_a_stream_sends_thinking_text_then_the_whole_block() -> None:
    translator = StreamTranslator(MODEL, 1)
    events: list[tuple[str, dict[str, Any]]] = [
        ("message_start", {"message": {"id": "msg_1", "model": MODEL, "usage": {}}}),
        (
            "content_block_start",
            {"index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "thinking_delta", "thinking": "Let me "}},
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "thinking_delta", "thinking": "think."}},
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "signature_delta", "signature": "sig-1"}},
        ),
        ("content_block_stop", {"index": 0}),
        ("content_block_start", {"index": 1, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 1, "delta": {"type": "text_delta", "text": "4."}}),
        ("content_block_stop", {"index": 1}),
    ]
    deltas = [
        chunk["choices"][0]["delta"]
        for event, data in events
        for chunk in translator.feed(event, data)
    ]
    assert [d.get("reasoning_content") for d in deltas[1:3]] == ["Let me ", "think."]
    assert deltas[3] == {"thinking_blocks": [BLOCK]}
    assert deltas[4] == {"content": "4."}
