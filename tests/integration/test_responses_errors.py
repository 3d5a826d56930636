"""POST /v1/responses failing: a stream cut or failed upstream midway ends with a Responses
error event; what cannot be translated to Chat Completions, bad fields and unknown
configurations get OpenAI's error answers."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

from tests.integration.responses_support import _assert_stream_valid, _events, gateway
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import RunningGateway
from tests.support.openai_schema import assert_valid

__all__ = ["gateway"]


# --- a stream that fails midway -----------------------------------------------------------


@pytest.mark.parametrize(
    ("configuration", "model"), [("chat", "small-model"), ("translated", "compat-small")]
)
def test_a_stream_cut_midway_ends_with_a_responses_error_event(
    gateway: RunningGateway, upstream: FakeUpstream, configuration: str, model: str
) -> None:
    upstream.behave(model, cut_after=2)
    status, events = _events(gateway, {"model": configuration, "input": "Hi"})
    assert status == 200
    _assert_stream_valid(events)
    last = events[-1]
    assert last["type"] == "error" and last["code"] == "stream_cut"
    assert not [e for e in events if e["type"] == "response.completed"]
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "stream_cut" and not row["success"]


def test_an_upstream_error_midway_is_relayed_as_an_error_event_without_the_key(
    gateway: RunningGateway, upstream: FakeUpstream
) -> None:
    upstream.behave(
        "claude-haiku",
        stream_error_after=2,
        stream_error=("overloaded_error", "Overloaded, key sk-ant-test"),
    )
    status, events = _events(gateway, {"model": "claude-chat", "input": "Hi"})
    assert status == 200
    _assert_stream_valid(events)
    last = events[-1]
    assert last["type"] == "error" and last["code"] == "overloaded_error"
    assert "sk-ant-test" not in json.dumps(events)
    (row,) = gateway.rows(expect=1)
    assert row["error_class"] == "upstream_5xx"


# --- what cannot be translated ------------------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"tools": [{"type": "web_search"}], "tool_choice": {"type": "web_search"}}, "tool_choice"),
        ({"tools": [{"type": "custom", "name": "apply_patch"}]}, "tools[0]"),
        ({"previous_response_id": "resp_1"}, "previous_response_id"),
        ({"background": True}, "background"),
        ({"store": True}, "store"),
        ({"include": ["message.output_text.logprobs"]}, "include"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type"),
    ],
)
def test_what_cannot_be_translated_is_refused_naming_the_parameter(
    gateway: RunningGateway, upstream: FakeUpstream, extra: dict[str, Any], param: str
) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        gateway.client().responses.create(model="translated", **{"input": "Hi", **extra})
    error = caught.value
    assert error.status_code == 400
    assert error.code == "unsupported_parameter"
    assert error.param == param
    assert_valid(error.response.json(), "ErrorResponse")
    assert not [r for r in upstream.received if r.path == "/v1/chat/completions"]
    (row,) = gateway.rows(expect=1)  # the gateway's own refusal, not the provider's 4xx
    assert (row["error_class"], row["http_status"]) == ("untranslatable", 400)


def test_bad_fields_and_unknown_configurations_get_openai_errors(
    gateway: RunningGateway,
) -> None:
    client = gateway.client()
    with pytest.raises(openai.BadRequestError) as bad:
        client.responses.create(model="chat", input=42)  # type: ignore[arg-type]
    assert (bad.value.code, bad.value.param) == ("invalid_request", "input")
    with pytest.raises(openai.BadRequestError) as bounded:
        client.responses.create(model="chat", input="Hi", max_output_tokens=0)
    assert bounded.value.param == "max_output_tokens"
    with pytest.raises(openai.NotFoundError) as unknown:
        client.responses.create(model="nope", input="Hi")
    assert unknown.value.code == "model_not_found"
