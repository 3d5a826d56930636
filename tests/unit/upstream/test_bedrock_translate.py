"""The pure halves of the Bedrock adapter: OpenAI chat → Converse, Converse → OpenAI,
ConverseStream events → chunks, event-stream frames, errors, embeddings."""

from __future__ import annotations

import base64
import struct
from typing import Any

import pytest

from gateway.domain.errors import TranslationError
from gateway.domain.usage import Usage
from gateway.upstream.bedrock import embeddings
from gateway.upstream.bedrock.adapter import model_url
from gateway.upstream.bedrock.errors import exception_name, map_error, stream_exception
from gateway.upstream.bedrock.events import BadFrame, FrameDecoder, FrameTooLarge
from gateway.upstream.bedrock.stream import StreamTranslator
from gateway.upstream.bedrock.translate import (
    from_converse_response,
    translate_request,
    usage_from_bedrock,
)
from gateway.upstream.error_body import ErrorBody
from tests.support.bedrock_answers import event_frame

CLAUDE = "anthropic.claude-3-5-haiku-20241022-v1:0"
USER = [{"role": "user", "content": "Hi"}]


def _request(body: dict[str, Any], model: str = CLAUDE, max_tokens: int | None = None) -> Any:
    return translate_request({"model": "m", "messages": USER, **body}, model, max_tokens)


def _refused(body: dict[str, Any], model: str = CLAUDE) -> TranslationError:
    with pytest.raises(TranslationError) as caught:
        _request(body, model)
    return caught.value


def test_system_messages_and_inference_config() -> None:
    request = translate_request(
        {
            "messages": [
                {"role": "system", "content": "A"},
                {"role": "developer", "content": [{"type": "text", "text": "B"}]},
                {"role": "user", "content": "Hi"},
                {"role": "user", "content": "there"},
            ],
            "max_completion_tokens": 100,
            "temperature": 0,
            "top_p": 1,
            "stop": "END",
            "seed": 7,  # dropped: Converse has none
            "user": "u-1",
        },
        CLAUDE,
        2048,
    )
    assert request.payload == {
        "messages": [{"role": "user", "content": [{"text": "Hi"}, {"text": "there"}]}],
        "system": [{"text": "A"}, {"text": "B"}],
        "inferenceConfig": {
            "maxTokens": 100,
            "temperature": 0,
            "topP": 1,
            "stopSequences": ["END"],
        },
    }
    assert request.response_tool is None


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"temperature": 1.5}, "temperature"),
        ({"top_p": -0.1}, "top_p"),
        ({"logit_bias": {"1": 2}}, "logit_bias"),
        ({"parallel_tool_calls": False}, "parallel_tool_calls"),
        ({"service_tier": "flex"}, "service_tier"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"stop": [""]}, "stop"),
        ({"reasoning_effort": "medium"}, "reasoning_effort"),  # not a Claude model
    ],
)
def test_what_converse_cannot_do_is_refused_naming_the_field(
    body: dict[str, Any], param: str
) -> None:
    assert _refused(body, "amazon.nova-pro-v1:0").param == param


def test_reasoning_effort_is_claudes_thinking_planned_as_for_anthropic() -> None:
    request = _request({"reasoning_effort": "high", "max_tokens": 5000, "temperature": 0.3})
    assert request.payload["additionalModelRequestFields"] == {
        "thinking": {"type": "enabled", "budget_tokens": 2500}  # at most half of max_tokens
    }
    assert request.payload["inferenceConfig"] == {"maxTokens": 5000}  # Claude refuses 0.3
    assert request.ignored == ("temperature",)
    unbounded = _request({"reasoning_effort": "low"})
    assert unbounded.payload["inferenceConfig"] == {"maxTokens": 4096}
    assert unbounded.payload["additionalModelRequestFields"]["thinking"]["budget_tokens"] == 2048
    # Where Claude would refuse thinking, it is left out and listed, not a 400.
    for body in (
        {"reasoning_effort": "low", "max_tokens": 1000},
        {"reasoning_effort": "low", "response_format": {"type": "json_object"}},
    ):
        request = _request(body)
        assert "additionalModelRequestFields" not in request.payload
        assert request.ignored == ("reasoning_effort",)
    assert _refused({"reasoning_effort": "none"} | {"n": 3}).param == "n"
    assert "additionalModelRequestFields" not in _request({"reasoning_effort": "none"}).payload


def test_thinking_blocks_go_back_as_reasoning_content_and_only_with_thinking_on() -> None:
    thought = {"type": "thinking", "thinking": "Look it up.", "signature": "sig=="}
    call = {"id": "t1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [call], "thinking_blocks": [thought]},
        {"role": "tool", "tool_call_id": "t1", "content": "found"},
    ]
    tools = [{"type": "function", "function": {"name": "f"}}]
    body = {"messages": messages, "tools": tools, "reasoning_effort": "low"}
    request = translate_request(body, CLAUDE, None)
    assert request.payload["messages"][1]["content"] == [
        {"reasoningContent": {"reasoningText": {"text": "Look it up.", "signature": "sig=="}}},
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}},
    ]
    off = translate_request({"messages": messages, "tools": tools}, CLAUDE, None)
    assert off.payload["messages"][1]["content"] == [
        {"toolUse": {"toolUseId": "t1", "name": "f", "input": {}}}
    ]


def test_tools_choices_and_a_forced_response_tool() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    spec = {"toolSpec": {"name": "f", "inputSchema": {"json": {"type": "object"}}}}
    assert _request({"tools": tools}).payload["toolConfig"] == {"tools": [spec]}
    named = {"type": "function", "function": {"name": "f"}}
    assert _request({"tools": tools, "tool_choice": named}).payload["toolConfig"]["toolChoice"] == {
        "tool": {"name": "f"}
    }
    assert "toolConfig" not in _request({"tools": tools, "tool_choice": "none"}).payload
    schema = {"type": "json_schema", "json_schema": {"name": "Out", "schema": {"type": "object"}}}
    request = _request({"tools": tools, "response_format": schema})
    assert request.response_tool == "Out"
    assert request.payload["toolConfig"]["toolChoice"] == {"any": {}}
    assert [t["toolSpec"]["name"] for t in request.payload["toolConfig"]["tools"]] == ["f", "Out"]


def test_tool_none_in_a_conversation_with_tool_calls_is_refused() -> None:
    tools = [{"type": "function", "function": {"name": "f"}}]
    messages = [
        *USER,
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "done"},
    ]
    with pytest.raises(TranslationError) as caught:
        translate_request(
            {"messages": messages, "tools": tools, "tool_choice": "none"}, CLAUDE, None
        )
    assert caught.value.param == "tool_choice"


def test_images_are_bytes_and_links_are_refused() -> None:
    data = base64.b64encode(b"GIF89a").decode()
    parts = [{"type": "image_url", "image_url": {"url": f"data:image/gif;base64,{data}"}}]
    request = translate_request({"messages": [{"role": "user", "content": parts}]}, CLAUDE, None)
    assert request.payload["messages"][0]["content"] == [
        {"image": {"format": "gif", "source": {"bytes": data}}}
    ]
    link = [
        {"type": "text", "text": "x"},
        {"type": "image_url", "image_url": {"url": "http://a/b.png"}},
    ]
    with pytest.raises(TranslationError) as caught:
        translate_request({"messages": [{"role": "user", "content": link}]}, CLAUDE, None)
    assert caught.value.param == "messages[0].content[1].image_url"


def test_a_converse_answer_as_a_chat_completion() -> None:
    answer = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "hmm", "signature": "s"}}},
                    {"text": "Calling."},
                    {"toolUse": {"toolUseId": "t1", "name": "f", "input": {"a": 1}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {
            "inputTokens": 10,
            "outputTokens": 5,
            "totalTokens": 18,
            "cacheReadInputTokens": 3,
        },
    }
    body = from_converse_response(answer, CLAUDE, 1, "req-9")
    assert body["id"] == "chatcmpl-req-9"
    message = body["choices"][0]["message"]
    assert message["content"] == "Calling."
    assert message["reasoning_content"] == "hmm"
    assert message["thinking_blocks"] == [{"type": "thinking", "thinking": "hmm", "signature": "s"}]
    assert message["tool_calls"] == [
        {"id": "t1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1}'}}
    ]
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["usage"] == {
        "prompt_tokens": 13,
        "completion_tokens": 5,
        "total_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 3},
    }
    answer["stopReason"] = "guardrail_intervened"
    assert (
        from_converse_response(answer, CLAUDE, 1)["choices"][0]["finish_reason"] == "content_filter"
    )
    answered = from_converse_response(answer | {"stopReason": "tool_use"}, CLAUDE, 1, None, "f")
    assert answered["choices"][0]["message"]["content"] == '{"a": 1}'
    assert answered["choices"][0]["finish_reason"] == "stop"


def test_usage_counts_cache_reads_and_writes_into_the_prompt() -> None:
    usage = {
        "inputTokens": 4,
        "outputTokens": 2,
        "cacheReadInputTokens": 10,
        "cacheWriteInputTokens": 6,
    }
    assert usage_from_bedrock(usage) == Usage(20, 2, cache_read_tokens=10, cache_write_tokens=6)
    assert usage_from_bedrock({"outputTokens": 1}) is None


def test_stream_events_become_chunks_with_a_held_answer_tool() -> None:
    translator = StreamTranslator(CLAUDE, 1, "chatcmpl-x", response_tool="Out")
    out = translator.feed("messageStart", {"role": "assistant"})
    out += translator.feed(
        "contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "Sure. "}}
    )
    start = {"toolUse": {"toolUseId": "t", "name": "Out"}}
    out += translator.feed("contentBlockStart", {"contentBlockIndex": 1, "start": start})
    for piece in ('{"a"', ": 1}"):
        delta = {"toolUse": {"input": piece}}
        out += translator.feed("contentBlockDelta", {"contentBlockIndex": 1, "delta": delta})
    out += translator.feed("contentBlockStop", {"contentBlockIndex": 1})
    out += translator.feed("messageStop", {"stopReason": "tool_use"})
    assert not translator.done
    out += translator.feed("metadata", {"usage": {"inputTokens": 3, "outputTokens": 4}})
    assert translator.done
    content = "".join(c["choices"][0]["delta"].get("content", "") for c in out)
    assert content == '{"a": 1}'  # the text before the answer tool is dropped
    assert out[-1]["choices"][0]["finish_reason"] == "stop"
    assert translator.usage_chunk()["usage"]["prompt_tokens"] == 3


def test_stream_reasoning_is_reasoning_content_then_the_whole_block() -> None:
    translator = StreamTranslator(CLAUDE, 1, "chatcmpl-x")
    out = []
    for delta in ({"text": "Hm"}, {"text": "m."}, {"signature": "sig"}):
        event = {"contentBlockIndex": 0, "delta": {"reasoningContent": delta}}
        out += translator.feed("contentBlockDelta", event)
    out += translator.feed("contentBlockStop", {"contentBlockIndex": 0})
    deltas = [c["choices"][0]["delta"] for c in out]
    assert [d.get("reasoning_content") for d in deltas[:2]] == ["Hm", "m."]
    assert deltas[2]["thinking_blocks"] == [
        {"type": "thinking", "thinking": "Hmm.", "signature": "sig"}
    ]


def test_stream_tool_calls_carry_their_arguments_as_they_arrive() -> None:
    translator = StreamTranslator(CLAUDE, 1, "chatcmpl-x")
    start = {"toolUse": {"toolUseId": "t9", "name": "f"}}
    first = translator.feed("contentBlockStart", {"contentBlockIndex": 2, "start": start})
    delta = translator.feed(
        "contentBlockDelta", {"contentBlockIndex": 2, "delta": {"toolUse": {"input": '{"q"'}}}
    )
    call = first[0]["choices"][0]["delta"]["tool_calls"][0]
    assert (call["index"], call["id"], call["function"]["name"]) == (0, "t9", "f")
    assert delta[0]["choices"][0]["delta"]["tool_calls"] == [
        {"index": 0, "function": {"arguments": '{"q"'}}
    ]


def test_event_frames_are_decoded_by_botocore_across_reads_and_checked() -> None:
    frame = event_frame({":message-type": "event", ":event-type": "messageStart"}, b'{"role":"a"}')
    decoder = FrameDecoder(1024)
    assert list(decoder.feed(frame[:7])) == []
    (decoded,) = list(decoder.feed(frame[7:]))
    assert (decoded.message_type, decoded.name, decoded.payload) == (
        "event",
        "messageStart",
        b'{"role":"a"}',
    )
    damaged = frame[:-1] + bytes([frame[-1] ^ 1])
    with pytest.raises(BadFrame):
        list(FrameDecoder(1024).feed(damaged))
    big = event_frame({":message-type": "event", ":event-type": "x"}, b"x" * 2000)
    with pytest.raises(FrameTooLarge):
        list(FrameDecoder(1024).feed(big[:1500]))


def test_errors_are_named_by_their_exception_type() -> None:
    assert (
        exception_name("ThrottlingException:http://internal.amazon.com/coral/")
        == "ThrottlingException"
    )
    assert exception_name("throttlingException") == "ThrottlingException"
    body = ErrorBody(data={"message": "Too many requests"}, is_json=True)
    status, error = map_error(429, body, "ThrottlingException:http://x/")
    assert status == 429
    assert error["error"] == {
        "message": "Too many requests",
        "type": "rate_limit_error",
        "param": None,
        "code": "ThrottlingException",
    }
    assert stream_exception("modelStreamErrorException", {"message": "m"})[0] == 424
    assert stream_exception("serviceUnavailableException", {})[0] == 503


def test_a_model_id_is_one_path_segment() -> None:
    arn = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude"
    assert model_url("https://h/", arn, "converse") == (
        "https://h/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile%2Fus.anthropic.claude/converse"
    )


def test_embeddings_bodies_and_base64_vectors() -> None:
    assert embeddings.family("amazon.titan-embed-text-v1") == "titan"
    assert embeddings.family("cohere.embed-multilingual-v3") == "cohere"
    with pytest.raises(TranslationError):
        embeddings.family("amazon.nova-lite-v1:0")
    with pytest.raises(TranslationError) as caught:
        embeddings.inputs({"input": [[1, 2, 3]]})
    assert caught.value.param == "input"
    packed = embeddings.openai_embeddings([[1.0, -2.0]], "m", 3, "base64")
    raw = base64.b64decode(packed["data"][0]["embedding"])
    assert struct.unpack("<2f", raw) == (1.0, -2.0)
    assert packed["usage"] == {"prompt_tokens": 3, "total_tokens": 3}
