"""AWS Bedrock behind the gateway's other ways in: the API key mode (a bearer token), the
Responses API through Converse, legacy completions through the chat translation, and the
anthropic SDK reaching a model that is not Claude through the Messages translation."""

from __future__ import annotations

from decimal import Decimal

import anthropic
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price

from gateway.catalog import data_version
from tests.integration.bedrock_support import (
    CLAUDE,
    MESSAGES,
    NOVA,
    _fresh,
    aws_environment,
    bedrock,
    gateway,
    new_rows,
)
from tests.support.fake_bedrock import API_KEY, Answer, FakeBedrock
from tests.support.gateway import TEST_KEY, RunningGateway

__all__ = ["_fresh", "aws_environment", "bedrock", "gateway"]


def test_a_bedrock_api_key_is_sent_as_a_bearer_token(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(NOVA, Answer(text="Nova here."))
    before = len(gateway.rows())
    answer = gateway.client().chat.completions.create(model="nova-chat", messages=MESSAGES)
    assert answer.choices[0].message.content == "Nova here."
    (sent,) = bedrock.sent("converse")
    assert sent.headers["Authorization"] == f"Bearer {API_KEY}"
    assert "X-Amz-Date" not in sent.headers
    assert bedrock.refused == []
    # nova has no YAML price: the catalog's (genai-prices' "aws" provider) prices the row.
    (row,) = new_rows(gateway, before)
    assert row["price_source"] == f"catalog:{data_version()}"
    expected = calc_price(PriceUsage(input_tokens=20, output_tokens=10), NOVA, provider_id="aws")
    assert row["actual_cost"] == expected.total_price


def test_the_responses_api_is_served_through_converse(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    response = gateway.client().responses.create(
        model="claude-chat", input="Say hello.", instructions="Be brief."
    )
    assert response.output_text == "Hello from Bedrock."
    (sent,) = bedrock.sent("converse")
    assert sent.body["system"] == [{"text": "Be brief."}]
    stream = gateway.client().responses.create(model="claude-chat", input="Hi", stream=True)
    kinds = [event.type for event in stream]
    assert kinds[-1] == "response.completed"
    assert bedrock.refused == []


def test_legacy_completions_go_through_the_chat_translation(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(CLAUDE, Answer(text="Once upon a time."), Answer(text="Streamed tale."))
    before = len(gateway.rows())
    client = gateway.client()
    whole = client.completions.create(model="claude-chat", prompt="Tell a tale.", max_tokens=30)
    assert whole.object == "text_completion"
    assert whole.choices[0].text == "Once upon a time."
    (sent,) = bedrock.sent("converse")
    assert sent.body == {
        "messages": [{"role": "user", "content": [{"text": "Tell a tale."}]}],
        "inferenceConfig": {"maxTokens": 30},
    }
    chunks = list(
        client.completions.create(
            model="claude-chat",
            prompt="Tell a tale.",
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "Streamed tale."
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 10
    rows = new_rows(gateway, before, expect=2)
    assert [r["operation"] for r in rows] == ["completion", "completion"]
    assert [r["actual_cost"] for r in rows] == [Decimal("0.000056")] * 2


def test_the_anthropic_sdk_reaches_a_model_not_claude_through_the_messages_translation(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(NOVA, Answer(text="Hi from Bedrock.", input_tokens=30, output_tokens=6))
    client = anthropic.Anthropic(base_url=gateway.url, api_key=TEST_KEY, max_retries=0)
    message = client.messages.create(
        model="nova-chat",
        max_tokens=100,
        system="Be brief.",
        messages=[{"role": "user", "content": "Say hello."}],
    )
    assert [block.type for block in message.content] == ["text"]
    assert message.content[0].text == "Hi from Bedrock."  # type: ignore[union-attr]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (30, 6)
    (sent,) = bedrock.sent("converse")
    assert sent.body["system"] == [{"text": "Be brief."}]
    assert sent.body["inferenceConfig"] == {"maxTokens": 100}
    assert bedrock.refused == []
