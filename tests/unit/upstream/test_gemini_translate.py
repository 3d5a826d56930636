"""The Gemini translation's pure parts: requests, answers, streams, errors, embeddings."""

from __future__ import annotations

import base64
import json
import struct
from typing import Any

import pytest

from gateway.domain.errors import TranslationError
from gateway.upstream.error_body import ErrorBody
from gateway.upstream.gemini.answer import from_gemini_response
from gateway.upstream.gemini.embeddings import embed_request, from_embed_response
from gateway.upstream.gemini.errors import map_error, retry_delay
from gateway.upstream.gemini.stream import StreamTranslator
from gateway.upstream.gemini.tools import new_call_id, parse_call_id
from gateway.upstream.gemini.translate import translate_request

TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "Look a word up.",
            "parameters": {
                "type": "object",
                "properties": {"q": {"type": "string"}},
                "additionalProperties": False,
            },
            "strict": True,
        },
    }
]
SIGNATURE = "c2lnbmF0dXJlPz4+Pw+/=="  # base64 holding '+' and '/'


def test_system_and_turns_become_system_instruction_and_alternating_contents() -> None:
    body = {
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "developer", "content": [{"type": "text", "text": "Answer in English."}]},
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": [{"type": "text", "text": "Again"}]},
            {"role": "user", "content": "and again"},
        ],
        "max_completion_tokens": 100,
        "temperature": 0.3,
        "top_p": 0.9,
        "stop": "END",
        "seed": 7,
        "user": "someone",
    }
    assert translate_request(body, "gemini-2.5-flash") == {
        "contents": [
            {"role": "user", "parts": [{"text": "Hi"}]},
            {"role": "model", "parts": [{"text": "Hello."}]},
            {"role": "user", "parts": [{"text": "Again"}, {"text": "and again"}]},
        ],
        "systemInstruction": {"parts": [{"text": "Be brief."}, {"text": "Answer in English."}]},
        "generationConfig": {
            "maxOutputTokens": 100,
            "temperature": 0.3,
            "topP": 0.9,
            "seed": 7,
            "stopSequences": ["END"],
        },
    }


def test_tools_choice_and_structured_output() -> None:
    body = {
        "messages": [{"role": "user", "content": "x?"}],
        "tools": TOOLS,
        "tool_choice": {"type": "function", "function": {"name": "lookup"}},
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "A", "schema": {"type": "object"}, "strict": True},
        },
    }
    out = translate_request(body, "gemini-2.5-flash")
    assert out["tools"] == [
        {
            "functionDeclarations": [
                {
                    "name": "lookup",
                    "description": "Look a word up.",
                    "parametersJsonSchema": TOOLS[0]["function"]["parameters"],
                }
            ]
        }
    ]
    assert out["toolConfig"] == {
        "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["lookup"]}
    }
    assert out["generationConfig"] == {
        "responseMimeType": "application/json",
        "responseJsonSchema": {"type": "object"},
    }
    for choice, mode in (("auto", "AUTO"), ("none", "NONE"), ("required", "ANY")):
        body = {
            "messages": [{"role": "user", "content": "x"}],
            "tools": TOOLS,
            "tool_choice": choice,
        }
        config = translate_request(body, "m")["toolConfig"]
        assert config == {"functionCallingConfig": {"mode": mode}}
    plain = {
        "messages": [{"role": "user", "content": "x"}],
        "response_format": {"type": "json_object"},
    }
    assert translate_request(plain, "m")["generationConfig"] == {
        "responseMimeType": "application/json"
    }


def test_reasoning_effort_is_a_budget_on_2x_and_a_level_on_3() -> None:
    body = {"messages": [{"role": "user", "content": "x"}], "reasoning_effort": "low"}
    assert translate_request(body, "gemini-2.5-pro")["generationConfig"] == {
        "thinkingConfig": {"thinkingBudget": 1024, "includeThoughts": True}
    }
    assert translate_request(body, "gemini-3-pro-preview")["generationConfig"] == {
        "thinkingConfig": {"thinkingLevel": "low", "includeThoughts": True}
    }
    off = {**body, "reasoning_effort": "none"}
    assert translate_request(off, "gemini-2.5-flash")["generationConfig"] == {
        "thinkingConfig": {"thinkingBudget": 0}
    }


def test_tool_calls_and_results_carry_names_ids_and_signatures_back() -> None:
    signed = new_call_id(None, SIGNATURE)
    assert "+" not in signed and "/" not in signed
    assert parse_call_id(signed).signature == SIGNATURE
    given = new_call_id("abc", None)
    assert given == "gid.abc" and parse_call_id(given).gemini_id == "abc"
    body = {
        "messages": [
            {"role": "user", "content": "x?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": signed,
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                    },
                    {
                        "id": given,
                        "type": "function",
                        "function": {"name": "define", "arguments": ""},
                    },
                    {
                        "id": "call_from_openai",
                        "type": "function",
                        "function": {"name": "other", "arguments": "{}"},
                        "extra_content": {"google": {"thought_signature": "AAAA"}},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": signed, "content": "x: a letter"},
            {"role": "tool", "tool_call_id": given, "content": [{"type": "text", "text": "ok"}]},
            {"role": "tool", "tool_call_id": "call_from_openai", "content": "fine"},
        ],
        "tools": TOOLS,
    }
    contents = translate_request(body, "gemini-3-pro")["contents"]
    assert contents[1] == {
        "role": "model",
        "parts": [
            {"functionCall": {"name": "lookup", "args": {"q": "x"}}, "thoughtSignature": SIGNATURE},
            {"functionCall": {"name": "define", "args": {}, "id": "abc"}},
            {"functionCall": {"name": "other", "args": {}}, "thoughtSignature": "AAAA"},
        ],
    }
    assert contents[2] == {
        "role": "user",
        "parts": [
            {"functionResponse": {"name": "lookup", "response": {"result": "x: a letter"}}},
            {"functionResponse": {"name": "define", "response": {"result": "ok"}, "id": "abc"}},
            {"functionResponse": {"name": "other", "response": {"result": "fine"}}},
        ],
    }


def test_a_gemini_3_call_without_its_signature_gets_googles_stand_in() -> None:
    call = {"id": "call_x", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    second = {**call, "id": new_call_id(None, SIGNATURE)}
    body = {
        "messages": [
            {"role": "user", "content": "x"},
            {"role": "assistant", "tool_calls": [call, {**call, "id": "call_y"}]},
            {"role": "tool", "tool_call_id": "call_x", "content": "1"},
            {"role": "tool", "tool_call_id": "call_y", "content": "2"},
            {"role": "assistant", "tool_calls": [second]},
            {"role": "tool", "tool_call_id": second["id"], "content": "3"},
        ]
    }
    gemini_3 = translate_request(body, "gemini-3-flash-preview")["contents"]
    signatures = [[p.get("thoughtSignature") for p in c["parts"]] for c in gemini_3[1::2]]
    assert signatures == [["skip_thought_signature_validator", None], [SIGNATURE]]
    older = translate_request(body, "gemini-2.5-flash")["contents"]
    assert [p.get("thoughtSignature") for p in older[1]["parts"]] == [None, None]


@pytest.mark.parametrize(
    ("change", "param"),
    [
        ({"logprobs": True}, "logprobs"),
        ({"n": 2}, "n"),
        ({"reasoning_effort": "xhigh"}, "reasoning_effort"),
        ({"stop": ["a", "b", "c", "d", "e", "f"]}, "stop"),
        ({"modalities": ["text", "audio"]}, "modalities"),
        (
            {"tool_choice": {"type": "function", "function": {"name": "nope"}}, "tools": TOOLS},
            "tool_choice",
        ),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}
                        ],
                    }
                ]
            },
            "messages[0].content[0].image_url.url",
        ),
        (
            {"messages": [{"role": "tool", "tool_call_id": "x", "content": "?"}]},
            "messages[0].tool_call_id",
        ),
    ],
)
def test_what_cannot_be_translated_is_refused_naming_the_parameter(
    change: dict[str, Any], param: str
) -> None:
    body = {"messages": [{"role": "user", "content": "x"}], **change}
    with pytest.raises(TranslationError) as refused:
        translate_request(body, "gemini-2.5-flash")
    assert refused.value.param == param


def test_a_data_url_image_is_inline_data() -> None:
    body = {
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is it?"},
                    {"type": "image_url", "image_url": {"url": "data:image/PNG;base64,AAAA"}},
                ],
            }
        ]
    }
    assert translate_request(body, "m")["contents"][0]["parts"] == [
        {"text": "What is it?"},
        {"inlineData": {"mimeType": "image/png", "data": "AAAA"}},
    ]


def _answer(parts: list[dict[str, Any]], finish: str = "STOP", **extra: Any) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
        "usageMetadata": {
            "promptTokenCount": 100,
            "cachedContentTokenCount": 40,
            "candidatesTokenCount": 20,
            "thoughtsTokenCount": 30,
            "totalTokenCount": 150,
        },
        "modelVersion": "gemini-2.5-flash-001",
        "responseId": "r1",
        **extra,
    }


def test_an_answer_maps_text_calls_usage_and_reasoning_tokens() -> None:
    answer = _answer(
        [
            {"text": "thinking about it", "thought": True},
            {"text": "Let me look."},
            {"functionCall": {"name": "lookup", "args": {"q": "x"}}, "thoughtSignature": SIGNATURE},
            {"functionCall": {"name": "lookup", "args": {"q": "y"}}},
        ]
    )
    out = from_gemini_response(answer, "gemini-2.5-flash", 1)
    choice = out["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] == "Let me look."
    assert choice["message"]["reasoning_content"] == "thinking about it"
    first, second = choice["message"]["tool_calls"]
    assert parse_call_id(first["id"]).signature == SIGNATURE
    assert json.loads(second["function"]["arguments"]) == {"q": "y"}
    assert out["usage"] == {
        "prompt_tokens": 100,
        "completion_tokens": 50,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 40},
        "completion_tokens_details": {"reasoning_tokens": 30},
    }
    assert out["model"] == "gemini-2.5-flash-001"
    single = from_gemini_response(answer, "m", 1, single_call=True)
    assert len(single["choices"][0]["message"]["tool_calls"]) == 1


def test_safety_stops_and_blocked_prompts_are_content_filter_with_the_reason() -> None:
    ratings = [{"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True}]
    answer = _answer([], "SAFETY")
    answer["candidates"][0]["safetyRatings"] = ratings
    choice = from_gemini_response(answer, "m", 1)["choices"][0]
    assert choice["finish_reason"] == "content_filter"
    assert choice["message"]["content"] is None
    assert choice["message"]["refusal"] == (
        "Gemini stopped the answer (finishReason: SAFETY): HARM_CATEGORY_HARASSMENT"
    )
    blocked = {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"}, "usageMetadata": {}}
    choice = from_gemini_response(blocked, "m", 1)["choices"][0]
    assert choice["finish_reason"] == "content_filter"
    assert "PROHIBITED_CONTENT" in choice["message"]["refusal"]
    assert (
        from_gemini_response(_answer([{"text": "a"}], "MAX_TOKENS"), "m", 1)["choices"][0][
            "finish_reason"
        ]
        == "length"
    )


def test_a_stream_sends_text_calls_finish_and_the_last_usage() -> None:
    translator = StreamTranslator("m", 1)
    thought = translator.feed(
        {"candidates": [{"content": {"parts": [{"text": "Hmm.", "thought": True}]}}]}
    )
    assert thought[0]["choices"][0]["delta"] == {"role": "assistant", "reasoning_content": "Hmm."}
    chunks = translator.feed(
        {
            "candidates": [{"content": {"parts": [{"text": "Hel"}]}}],
            "usageMetadata": {"promptTokenCount": 5},
            "responseId": "r",
        }
    )
    chunks += translator.feed({"candidates": [{"content": {"parts": [{"text": "lo"}]}}]})
    assert not translator.done
    chunks += translator.feed(
        {
            "candidates": [
                {
                    "content": {
                        "parts": [
                            {"functionCall": {"name": "a", "args": {}}, "thoughtSignature": "QQ=="},
                            {"functionCall": {"name": "b", "args": {"z": 1}}},
                        ]
                    },
                    "finishReason": "STOP",
                }
            ],
            "usageMetadata": {
                "promptTokenCount": 5,
                "candidatesTokenCount": 3,
                "thoughtsTokenCount": 2,
            },
        }
    )
    assert translator.done
    deltas = [c["choices"][0]["delta"] for c in chunks]
    assert deltas[0] == {"content": "Hel"}
    assert deltas[1] == {"content": "lo"}
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert [c["index"] for c in calls] == [0, 1]
    assert parse_call_id(calls[0]["id"]).signature == "QQ=="
    assert calls[1]["function"] == {"name": "b", "arguments": '{"z": 1}'}
    assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    usage = translator.usage_chunk()["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (5, 5)
    assert usage["completion_tokens_details"] == {"reasoning_tokens": 2}
    assert {c["id"] for c in chunks} == {"chatcmpl-r"}


def test_errors_keep_google_status_and_retry_info() -> None:
    data = {
        "error": {
            "code": 429,
            "message": "Quota exceeded",
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.500s"}
            ],
        }
    }
    status, envelope = map_error(429, ErrorBody(data=data, is_json=True))
    assert status == 429
    assert envelope["error"]["code"] == "RESOURCE_EXHAUSTED"
    assert envelope["error"]["message"] == "Quota exceeded"
    assert envelope["error"]["type"] == "rate_limit_error" or envelope["error"]["type"]
    assert retry_delay(data) == "1.5"
    bad_key = {
        "error": {
            "code": 400,
            "message": "API key not valid.",
            "status": "INVALID_ARGUMENT",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
            ],
        }
    }
    assert map_error(400, ErrorBody(data=bad_key, is_json=True))[0] == 401
    bad_key["error"]["details"] = []
    assert map_error(400, ErrorBody(data=bad_key, is_json=True))[0] == 400
    assert retry_delay({"error": {"details": [{"@type": "x", "retryDelay": "3s"}]}}) is None


def test_embeddings_batch_in_order_and_base64_as_openai_packs_it() -> None:
    body = {"input": ["a", "bb"], "dimensions": 2, "encoding_format": "base64"}
    assert embed_request(body, "gemini-embedding-001") == {
        "requests": [
            {
                "model": "models/gemini-embedding-001",
                "content": {"parts": [{"text": t}]},
                "outputDimensionality": 2,
            }
            for t in ("a", "bb")
        ]
    }
    out = from_embed_response(
        {"embeddings": [{"values": [0.5, 1.0]}, {"values": [2.0, -1.0]}]}, "e", "base64"
    )
    assert out is not None
    packed = base64.b64decode(out["data"][1]["embedding"])
    assert struct.unpack("<2f", packed) == (2.0, -1.0)
    with pytest.raises(TranslationError) as refused:
        embed_request({"input": [[1, 2, 3]]}, "e")
    assert refused.value.param == "input"
