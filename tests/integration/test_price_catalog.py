"""The built-in price catalog through the real server
(docs/configuration.md#prices-the-built-in-catalog): a model without a YAML price is
priced by genai-prices' bundled data, its row says ``price_source: catalog:<data
version>``; a YAML-priced one says ``config``."""

from __future__ import annotations

from decimal import Decimal

from genai_prices import Usage as CatalogUsage
from genai_prices import calc_price

from gateway.catalog import data_version
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import gateway_yaml, running_gateway

MESSAGES = [{"role": "user", "content": "hello"}]
MODELS = "  - {id: listed, provider: fake, name: gpt-4o-mini, capabilities: [chat, streaming]}"
CONFIGURATIONS = "  - {id: catalogued, mode: fixed, model: listed}"


def test_an_unpriced_model_is_priced_by_the_catalog_and_a_yaml_price_by_the_config(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    upstream.behave("gpt-4o-mini", prompt_tokens=1000, completion_tokens=500)
    upstream.behave("small-model", prompt_tokens=1000, completion_tokens=500)
    yaml = gateway_yaml(upstream.url, sqlite_url, models=MODELS, configurations=CONFIGURATIONS)
    with running_gateway(yaml) as gateway:
        client = gateway.client()
        client.chat.completions.create(model="catalogued", messages=MESSAGES)
        client.chat.completions.create(model="chat", messages=MESSAGES)
        no_usage = upstream.behave("gpt-4o-mini", report_usage=False)
        assert not no_usage.report_usage
        client.chat.completions.create(model="catalogued", messages=MESSAGES)
        rows = gateway.rows(expect=3)
    listed = sorted(
        (row for row in rows if row["served_model"] == "listed"),
        key=lambda row: row["actual_cost"] is None,
    )
    (small,) = [row for row in rows if row["served_model"] == "small"]
    reported, estimated = listed
    theirs = calc_price(
        CatalogUsage(input_tokens=1000, output_tokens=500), "gpt-4o-mini", provider_id="openai"
    ).total_price
    assert abs(reported["actual_cost"] - theirs) <= Decimal("1e-12")
    assert reported["price_source"] == f"catalog:{data_version()}"
    # Estimated usage (none reported) is priced by the catalog too, and says so.
    assert estimated["usage_source"] == "estimated"
    assert estimated["estimated_cost"] is not None and estimated["estimated_cost"] > 0
    assert estimated["price_source"] == f"catalog:{data_version()}"
    # The YAML price: 1000 * 0.15 + 500 * 0.60 per million tokens.
    assert small["actual_cost"] == Decimal("0.00045")
    assert small["price_source"] == "config"


def test_a_long_prompt_pays_its_tiers_price_whole_and_streamed(
    upstream: FakeUpstream, sqlite_url: str
) -> None:
    models = (
        "  - {id: tiered, provider: fake, name: long-model, capabilities: [chat, streaming],"
        " price: {input: 1, output: 2, tiers: [{aboveInputTokens: 1000, input: 3, output: 5}]}}"
    )
    configurations = "  - {id: long, mode: fixed, model: tiered}"
    yaml = gateway_yaml(upstream.url, sqlite_url, models=models, configurations=configurations)
    with running_gateway(yaml) as gateway:
        client = gateway.client()
        upstream.behave("long-model", prompt_tokens=1000, completion_tokens=100)
        client.chat.completions.create(model="long", messages=MESSAGES)
        upstream.behave("long-model", prompt_tokens=1001, completion_tokens=100)
        client.chat.completions.create(model="long", messages=MESSAGES)
        stream = client.chat.completions.create(
            model="long", messages=MESSAGES, stream=True, stream_options={"include_usage": True}
        )
        for _ in stream:
            pass
        rows = gateway.rows(expect=3)
    costs = sorted(row["actual_cost"] for row in rows)
    # 1000 prompt tokens: the base prices; 1001: the tier's, for every token.
    assert costs == [
        Decimal("0.0012"),
        Decimal("0.003503"),
        Decimal("0.003503"),
    ]
