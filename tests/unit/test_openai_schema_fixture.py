"""The vendored OpenAI schema fixture: complete, sourced, and read as OpenAI means it."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.support.openai_schema import (
    COMPLETION_STREAM_CHUNK,
    SCHEMA_FILE,
    assert_valid,
    schema_errors,
    source,
)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "vendor_openai_schema.py"


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("vendor_openai_schema", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _refs(node: Any) -> set[str]:
    if isinstance(node, dict):
        found = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
        for value in node.values():
            found |= _refs(value)
        return found
    if isinstance(node, list):
        return set().union(*map(_refs, node)) if node else set()
    return set()


def test_the_fixture_names_its_source_commit_and_carries_the_licence() -> None:
    found = source()
    assert found["repository"] == "https://github.com/openai/openai-openapi"
    assert re.fullmatch(r"[0-9a-f]{40}", found["commit"])
    assert found["openapi"].startswith("3.1")
    licence = (SCHEMA_FILE.parent / "LICENSE").read_text()
    assert "MIT License" in licence and "Copyright (c) OpenAI" in licence


def test_every_root_and_every_schema_it_reaches_is_vendored() -> None:
    raw = json.loads(SCHEMA_FILE.read_text())
    schemas = raw["components"]["schemas"]
    assert set(_script().ROOTS) <= set(schemas)
    for name, schema in schemas.items():
        for ref in _refs(schema):
            assert ref.removeprefix("#/components/schemas/") in schemas, (name, ref)


def test_the_script_keeps_the_closure_and_drops_only_documentation() -> None:
    spec = {
        "openapi": "3.1.0",
        "info": {"version": "9"},
        "components": {
            "schemas": {
                "ErrorResponse": {
                    "description": "dropped",
                    "x-oaiMeta": {"example": "dropped"},
                    "properties": {
                        "error": {"$ref": "#/components/schemas/Error"},
                        "description": {"type": "string", "example": "dropped"},
                    },
                    "required": ["error", "description"],
                },
                "Error": {"type": "object", "title": "dropped", "nullable": True},
                "Unrelated": {"type": "string"},
            }
        },
    }
    script = _script()
    script.ROOTS = ("ErrorResponse",)
    vendored = script.vendor(spec, "0" * 40, "openapi.yaml")
    assert vendored["source"]["commit"] == "0" * 40
    assert vendored["components"]["schemas"] == {
        "Error": {"type": "object", "nullable": True},
        "ErrorResponse": {
            "properties": {
                "description": {"type": "string"},  # a property named description stays
                "error": {"$ref": "#/components/schemas/Error"},
            },
            "required": ["error", "description"],
        },
    }
    assert json.loads(script.dumps(vendored)) == vendored


def test_nullable_admits_null_where_openai_marks_it_and_nowhere_else() -> None:
    chunk = {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": {}, "finish_reason": None, "logprobs": None}],
        "usage": None,  # `$ref` + `nullable: true` in the published document
    }
    assert_valid(chunk, "CreateChatCompletionStreamResponse")
    chunk["choices"][0]["finish_reason"] = "sideways"
    assert schema_errors(chunk, "CreateChatCompletionStreamResponse")
    assert schema_errors({"model": "m", "prompt": None}, "CreateCompletionRequest") == []
    assert schema_errors({"model": "m", "prompt": 3}, "CreateCompletionRequest")


def test_the_legacy_completion_chunk_admits_a_null_finish_reason_only_while_streaming() -> None:
    chunk = {
        "id": "cmpl-1",
        "object": "text_completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "text": "a", "logprobs": None, "finish_reason": None}],
    }
    assert schema_errors(chunk, COMPLETION_STREAM_CHUNK) == []
    assert schema_errors(chunk, "CreateCompletionResponse")


def test_a_recursive_reference_recurses_instead_of_matching_anything() -> None:
    nested = {
        "type": "and",
        "filters": [
            {"type": "eq", "key": "a", "value": "b"},
            {"type": "or", "filters": [{"type": "gt", "key": "n", "value": 1}]},
        ],
    }
    assert_valid(nested, "CompoundFilter")
    broken = {"type": "and", "filters": [{"type": "or", "filters": [{"type": "bogus"}]}]}
    assert schema_errors(broken, "CompoundFilter")


def test_an_unknown_schema_name_is_a_clear_error() -> None:
    with pytest.raises(KeyError, match="not vendored"):
        schema_errors({}, "NoSuchSchema")


# --- the Responses API objects, ready for /v1/responses ------------------------------------


def _response(status: str, text: str) -> dict[str, Any]:
    message = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "model": "gpt-4o-mini",
        "tools": [],
        "tool_choice": "auto",
        "output": [message] if text else [],
        "parallel_tool_calls": True,
        "metadata": {},
        "temperature": 1.0,
        "top_p": 1.0,
    }


def test_responses_objects_and_stream_events_validate() -> None:
    assert_valid({"model": "gpt-4o-mini", "input": "Hello"}, "CreateResponse")
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "ResponseCreatedEvent",
            {
                "type": "response.created",
                "sequence_number": 0,
                "response": _response("in_progress", ""),
            },
        ),
        (
            "ResponseTextDeltaEvent",
            {
                "type": "response.output_text.delta",
                "sequence_number": 1,
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": "Hi",
                "logprobs": [],
            },
        ),
        (
            "ResponseFunctionCallArgumentsDeltaEvent",
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 2,
                "item_id": "fc_1",
                "output_index": 1,
                "delta": '{"q":',
            },
        ),
        (
            "ResponseCompletedEvent",
            {
                "type": "response.completed",
                "sequence_number": 3,
                "response": _response("completed", "Hi"),
            },
        ),
    ]
    for name, event in events:
        assert_valid(event, name)
        assert_valid(event, "ResponseStreamEvent")
    assert_valid(_response("completed", "Hi"), "Response")
    wrong = {**_response("completed", "Hi"), "status": "done"}
    assert schema_errors(wrong, "Response")


def test_a_failed_any_of_names_its_likely_cause() -> None:
    message = {"role": "assistant", "content": 5, "refusal": None}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    answer = {"id": "x", "object": "chat.completion", "created": 1, "model": "m"}
    (error,) = schema_errors({**answer, "choices": [choice]}, "CreateChatCompletionResponse")
    assert error.startswith("choices/0/message/content: ")
    assert "likely: choices/0/message/content: 5 is not of type 'string'" in error
