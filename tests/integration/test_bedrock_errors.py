"""AWS Bedrock's failures behind the OpenAI API: a guardrail block as content_filter,
throttling retried by Retry-After, Bedrock's errors as OpenAI envelopes, an exception in
the middle of a stream. The openai SDK → the gateway → a fake Bedrock Runtime that
verifies each request's SigV4 signature and checks its body against the service model."""

from __future__ import annotations

from decimal import Decimal

import openai
import pytest

from tests.integration.bedrock_support import (
    CLAUDE,
    MESSAGES,
    _fresh,
    aws_environment,
    bedrock,
    gateway,
    new_rows,
)
from tests.support.fake_bedrock import Answer, FakeBedrock
from tests.support.gateway import RunningGateway

__all__ = ["_fresh", "aws_environment", "bedrock", "gateway"]


def test_a_guardrail_block_is_content_filter_whole_and_streamed(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    blocked = Answer(
        text="Sorry, the model cannot answer this.", stop_reason="guardrail_intervened"
    )
    bedrock.script(CLAUDE, blocked)
    before = len(gateway.rows())
    answer = gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert answer.choices[0].finish_reason == "content_filter"
    bedrock.script(CLAUDE, Answer(text="Filtered.", stop_reason="content_filtered"))
    stream = gateway.client().chat.completions.create(
        model="claude-chat", messages=MESSAGES, stream=True
    )
    finishes = [c.choices[0].finish_reason for c in stream if c.choices]
    assert finishes[-1] == "content_filter"
    rows = new_rows(gateway, before, expect=2)
    assert len(rows) == 2 and all(row["success"] == 1 for row in rows)
    # 20·0.80 + 10·4.00 = 56 per 1M, each
    assert [row["actual_cost"] for row in rows] == [Decimal("0.000056")] * 2


def test_a_throttled_call_is_retried_honouring_retry_after(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(
        CLAUDE,
        Answer(status=429, exception="ThrottlingException", retry_after="0"),
        Answer(text="After the wait."),
    )
    before = len(gateway.rows())
    answer = gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert answer.choices[0].message.content == "After the wait."
    assert len(bedrock.sent("converse")) == 2
    (row,) = new_rows(gateway, before)
    assert row["success"] == 1 and row["actual_cost"] == Decimal("0.000056")

    bedrock.script(CLAUDE, Answer(stream_exception="ThrottlingException"), Answer(text="Later."))
    stream = gateway.client().chat.completions.create(
        model="claude-chat", messages=MESSAGES, stream=True
    )
    assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Later."


def test_bedrock_errors_reach_the_client_as_openai_envelopes(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(CLAUDE, Answer(status=400, exception="ValidationException"))
    with pytest.raises(openai.BadRequestError) as refused:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    body = refused.value.body
    assert isinstance(body, dict)
    assert body["code"] == "ValidationException"
    assert body["message"] == "fake ValidationException"
    assert len(bedrock.sent("converse")) == 1  # a 400 is not retried

    bedrock.script(CLAUDE, Answer(status=503, exception="ServiceUnavailableException"))
    with pytest.raises(openai.APIStatusError) as failed:
        gateway.client().chat.completions.create(model="claude-chat", messages=MESSAGES)
    assert failed.value.status_code == 502  # every attempt failed: the gateway's own 502
    assert "http_5xx" in failed.value.message
    assert len(bedrock.sent("converse")) == 3  # retried once (maxRetries: 1)


def test_an_exception_mid_stream_ends_the_stream_with_an_error_event(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(
        CLAUDE,
        Answer(
            text="One two three.",
            stream_exception="ModelStreamErrorException",
            stream_exception_after=3,
        ),
    )
    stream = gateway.client().chat.completions.create(
        model="claude-chat", messages=MESSAGES, stream=True
    )
    text = ""
    with pytest.raises(openai.APIError) as failed:
        for chunk in stream:
            text += chunk.choices[0].delta.content or "" if chunk.choices else ""
    assert text == "One two "  # what arrived before the exception
    assert "fake stream failure" in failed.value.message
    assert len(bedrock.sent("converse-stream")) == 1  # bytes were sent: no retry
