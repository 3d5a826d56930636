"""Anthropic behind the OpenAI API, streams: Messages API events translated into
chat.completion.chunk, the usage chunk with its cost, a tool call from input_json deltas;
the row records the merged usage."""

from __future__ import annotations

from decimal import Decimal

from tests.integration.anthropic_support import MESSAGES, TOOLS, _sent, _stream_rows, gateway
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway

__all__ = ["gateway"]


def test_stream_translates_events_and_records_merged_usage(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        content="one two three four",
        prompt_tokens=20,
        cached_tokens=10,
        cache_write_tokens=8,
        completion_tokens=4,
    )
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-chat", messages=MESSAGES, stream=True
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "one two three four"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert all(c.usage is None for c in chunks)  # the usage chunk is stripped
    assert _sent(upstream).body["stream"] is True

    (row,) = _stream_rows(gateway)
    assert row["operation"] == "stream" and row["success"] == 1 and row["error_class"] is None
    # input from message_start (20 + 10 read + 8 written), output from message_delta (not 1)
    assert (row["actual_input_tokens"], row["actual_output_tokens"]) == (38, 4)
    # 20·1.00 + 10·0.10 + 8·1.25 + 4·5.00 = 51 per 1M
    assert row["actual_cost"] == Decimal("0.000051")
    assert row["usage_source"] == "provider"
    assert row["time_to_first_token_ms"] is not None


def test_stream_usage_chunk_reaches_a_client_that_asked_with_its_cost(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave("claude-haiku", prompt_tokens=1000, cached_tokens=2000, completion_tokens=500)
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-chat",
            messages=MESSAGES,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == (3000, 500)
    assert last.usage.model_extra == {"cost": 0.0037}  # 1000 + 200 + 2500 per 1M
    assert "stream_options" not in _sent(upstream).body  # not an Anthropic parameter


def test_a_streamed_tool_call_reassembles_from_input_json_deltas(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        content="Checking.",
        tool_call=True,
        tool_json_pieces=['{"q"', ': "x', 'yz"}'],
    )
    chunks = list(
        gateway.client().chat.completions.create(
            model="claude-chat", messages=MESSAGES, tools=TOOLS, stream=True
        )
    )
    calls: dict[int, dict[str, str]] = {}
    for chunk in chunks:
        for delta in (c.delta.tool_calls or [] for c in chunk.choices):
            for part in delta:
                entry = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
                entry["id"] += part.id or ""
                if part.function is not None:
                    entry["name"] += part.function.name or ""
                    entry["arguments"] += part.function.arguments or ""
    assert calls == {0: {"id": "toolu_1", "name": "lookup", "arguments": '{"q": "xyz"}'}}
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    (row,) = _stream_rows(gateway)
    assert row["operation"] == "stream" and row["success"] == 1
