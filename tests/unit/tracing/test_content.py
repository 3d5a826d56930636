"""A streamed answer's content put together for a span (gateway/tracing/content.py)."""

from __future__ import annotations

from typing import Any

from gateway.tracing.content import StreamedContent


def _fed(*events: dict[str, Any]) -> list[Any]:
    content = StreamedContent()
    for event in events:
        content.add(event)
    return content.messages()


def test_chat_chunks_make_the_message_a_whole_answer_would_have() -> None:
    def chunk(**delta: Any) -> dict[str, Any]:
        return {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]}

    call = {"index": 0, "id": "call_1", "function": {"name": "weather", "arguments": ""}}
    messages = _fed(
        chunk(role="assistant", content=""),
        chunk(reasoning_content="Think"),
        chunk(content="Hel"),
        chunk(content="lo."),
        chunk(tool_calls=[call]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '{"city": '}}]),
        chunk(tool_calls=[{"index": 0, "function": {"arguments": '"Oslo"}'}}]),
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 4}},
    )
    assert messages == [
        {
            "role": "assistant",
            "content": "Hello.",
            "reasoning_content": "Think",
            "finish_reason": "tool_calls",
            "tool_calls": [
                {
                    "type": "function",
                    "id": "call_1",
                    "function": {"name": "weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        }
    ]


def test_messages_events_make_the_content_blocks() -> None:
    messages = _fed(
        {"type": "message_start", "message": {"id": "msg_1", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "!"}},
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "t", "name": "ls", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "."}'},
        },
        {"type": "message_stop"},
    )
    assert messages == [
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Hi!"},
                {"type": "tool_use", "id": "t", "name": "ls", "input": '{"path": "."}'},
            ],
        }
    ]


def test_a_responses_stream_gives_its_completed_output() -> None:
    output = [{"type": "message", "content": [{"type": "output_text", "text": "Done."}]}]
    messages = _fed(
        {"type": "response.output_text.delta", "delta": "Done."},
        {"type": "response.completed", "response": {"output": output}},
    )
    assert messages == output


def test_nothing_fed_is_no_message() -> None:
    assert _fed() == []
