"""Titan and Cohere embeddings through Bedrock's InvokeModel, signed and priced."""

from __future__ import annotations

from decimal import Decimal

from tests.integration.bedrock_support import (
    TITAN,
    _fresh,
    aws_environment,
    bedrock,
    gateway,
    new_rows,
)
from tests.support.fake_bedrock import Answer, FakeBedrock
from tests.support.gateway import RunningGateway

__all__ = ["_fresh", "aws_environment", "bedrock", "gateway"]


def test_titan_embeds_one_text_a_call_and_the_row_is_priced(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    bedrock.script(TITAN, Answer(embedding=[0.5, -0.25]))
    before = len(gateway.rows())
    # The SDK asks for base64 by default and decodes it: the vectors come back as floats.
    result = gateway.client().embeddings.create(
        model="titan-embed", input=["one two three", "four five"], dimensions=256
    )
    assert [d.embedding for d in result.data] == [[0.5, -0.25], [0.5, -0.25]]
    assert result.usage.prompt_tokens == 5
    sent = bedrock.sent("invoke")
    assert [r.body for r in sent] == [
        {"inputText": "one two three", "dimensions": 256},
        {"inputText": "four five", "dimensions": 256},
    ]
    assert sent[0].raw_path == f"/model/{TITAN}/invoke"
    assert bedrock.refused == []
    (row,) = new_rows(gateway, before)
    assert row["actual_input_tokens"] == 5
    assert row["actual_cost"] == Decimal("0.0000001")  # 5 · 0.02 per 1M


def test_cohere_embeds_every_text_in_one_call_counting_the_header(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    before = len(gateway.rows())
    result = gateway.client().embeddings.create(
        model="cohere-embed", input=["alpha beta", "gamma"], encoding_format="float"
    )
    assert [d.index for d in result.data] == [0, 1]
    assert result.data[0].embedding == [0.25, -0.5, 1.0]
    (sent,) = bedrock.sent("invoke")
    assert sent.body == {"texts": ["alpha beta", "gamma"], "input_type": "search_document"}
    (row,) = new_rows(gateway, before)
    assert row["actual_input_tokens"] == 3
    assert row["actual_cost"] == Decimal("0.0000003")  # 3 · 0.10 per 1M


def test_cohere_takes_96_texts_a_call_and_the_vectors_keep_their_order(
    gateway: RunningGateway, bedrock: FakeBedrock
) -> None:
    texts = [f"text {i}" for i in range(100)]
    result = gateway.client().embeddings.create(model="cohere-embed", input=texts)
    assert [d.index for d in result.data] == list(range(100))
    assert [len(r.body["texts"]) for r in bedrock.sent("invoke")] == [96, 4]
    assert result.usage.prompt_tokens == 200
    assert bedrock.refused == []
