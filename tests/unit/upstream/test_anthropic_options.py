"""Every OpenAI chat field has a decision for Anthropic: translated, refused or dropped."""

from __future__ import annotations

from typing import Any

import pytest

from gateway.domain.errors import TranslationError
from gateway.upstream.anthropic.options import DROPPED, REFUSED_UNLESS_DEFAULT, TRANSLATED
from gateway.upstream.anthropic.translate import to_messages_request
from tests.support.openai_schema import document

MODEL = "claude-sonnet-4-5"
BASE = {"model", "max_tokens", "messages"}


def translate(**body: Any) -> dict[str, Any]:
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return to_messages_request(body, MODEL, 1024)


def _properties(schema: dict[str, Any]) -> set[str]:
    schemas = document()["components"]["schemas"]
    if "$ref" in schema:
        return _properties(schemas[schema["$ref"].rsplit("/", 1)[-1]])
    found = set(schema.get("properties", {}))
    for part in schema.get("allOf", []):
        found |= _properties(part)
    return found


def test_every_field_of_openais_chat_request_has_exactly_one_decision() -> None:
    # A field OpenAI adds shows up here when the schema is vendored again.
    fields = _properties(document()["components"]["schemas"]["CreateChatCompletionRequest"])
    decided = [TRANSLATED, DROPPED, frozenset(REFUSED_UNLESS_DEFAULT)]
    assert set().union(*decided) == fields
    assert sum(len(group) for group in decided) == len(fields)  # no field in two groups


REFUSED: list[tuple[str, Any]] = [
    ("logprobs", True),
    ("top_logprobs", 3),
    ("logit_bias", {"50256": -100}),
    ("frequency_penalty", 0.5),
    ("presence_penalty", -1),
    ("audio", {"voice": "alloy", "format": "mp3"}),
    ("modalities", ["text", "audio"]),
    ("web_search_options", {}),
    ("moderation", {"model": "omni-moderation-latest"}),
    ("functions", [{"name": "f", "parameters": {"type": "object"}}]),
    ("function_call", "auto"),
]


@pytest.mark.parametrize(("field", "value"), REFUSED)
def test_a_field_claude_cannot_honour_is_refused_by_name(field: str, value: Any) -> None:
    with pytest.raises(TranslationError) as info:
        translate(**{field: value})
    assert info.value.param == field
    assert field in info.value.message


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("logprobs", False),
        ("top_logprobs", 0),
        ("logit_bias", None),
        ("frequency_penalty", 0),
        ("presence_penalty", 0.0),
        ("modalities", ["text"]),
        ("reasoning_effort", "none"),
        ("functions", []),
    ],
)
def test_a_refusable_field_at_its_default_is_accepted_and_not_sent(field: str, value: Any) -> None:
    assert set(translate(**{field: value})) == BASE


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("seed", 42),
        ("store", True),
        ("metadata", {"team": "search"}),
        ("prompt_cache_key", "k"),
        ("prompt_cache_retention", "24h"),
        ("prompt_cache_options", {"ttl": "24h"}),
        ("prediction", {"type": "content", "content": "draft"}),
        ("stream_options", {"include_usage": True, "include_obfuscation": False}),
    ],
)
def test_fields_that_cannot_change_the_answer_are_dropped(field: str, value: Any) -> None:
    assert field in DROPPED | {"stream_options"}
    assert set(translate(**{field: value})) == BASE


def test_temperature_above_one_is_refused_and_one_is_kept() -> None:
    assert translate(temperature=1)["temperature"] == 1
    with pytest.raises(TranslationError) as info:
        translate(temperature=1.5)
    assert info.value.param == "temperature"


def test_safety_identifier_or_user_becomes_the_metadata_user_id() -> None:
    assert translate(user="u-1")["metadata"] == {"user_id": "u-1"}
    assert translate(safety_identifier="s-1")["metadata"] == {"user_id": "s-1"}
    assert translate(user="u-1", safety_identifier="s-1")["metadata"] == {"user_id": "s-1"}
    assert "metadata" not in translate(user="")
    with pytest.raises(TranslationError) as info:
        translate(user=7)
    assert info.value.param == "user"


def test_service_tier_maps_auto_and_default_and_refuses_the_rest() -> None:
    assert translate(service_tier="auto")["service_tier"] == "auto"
    assert translate(service_tier="default")["service_tier"] == "standard_only"
    for tier in ("flex", "priority", "scale"):
        with pytest.raises(TranslationError) as info:
            translate(service_tier=tier)
        assert info.value.param == "service_tier"


def test_an_assistant_refusal_in_the_history_is_kept_as_its_text() -> None:
    out = translate(
        messages=[
            {"role": "user", "content": "x"},
            {"role": "assistant", "content": None, "refusal": "I can't help with that."},
            {"role": "user", "content": "ok"},
        ]
    )
    assert out["messages"][1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": "I can't help with that."}],
    }


@pytest.mark.parametrize(
    ("key", "value"),
    [("function_call", {"name": "f", "arguments": "{}"}), ("audio", {"id": "audio_1"})],
)
def test_an_assistant_function_call_or_audio_in_the_history_is_refused(
    key: str, value: Any
) -> None:
    with pytest.raises(TranslationError) as info:
        translate(messages=[{"role": "user", "content": "x"}, {"role": "assistant", key: value}])
    assert info.value.param == "messages[1]"
    assert key in info.value.message
