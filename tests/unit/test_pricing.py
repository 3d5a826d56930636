"""cost() prices a call exactly by the served model's price; format_usd writes it plainly."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import msgspec
import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import load_config_text
from gateway.domain.model import Price, PriceTier
from gateway.domain.usage import Usage
from gateway.pricing import cost, format_usd, usd_json_number

D = Decimal

MINI = Price(input=Decimal("0.15"), output=Decimal("0.60"))
CACHED = Price(
    input=Decimal("2.50"),
    output=Decimal("10.00"),
    cache_read=Decimal("1.25"),
    cache_write=Decimal("3.75"),
)


def test_cost_is_input_and_output_per_million_exactly() -> None:
    assert cost(Usage(input_tokens=1000, output_tokens=500), MINI) == Decimal("0.00045")


def test_cost_has_no_float_rounding() -> None:
    result = cost(Usage(input_tokens=1, output_tokens=1), Price(Decimal("0.1"), Decimal("0.2")))
    assert result == Decimal("0.0000003")
    assert isinstance(result, Decimal)


def test_long_prices_and_large_counts_do_not_round() -> None:
    price = Price(Decimal("0.123456789012345678901"), Decimal("9.87654321"))
    usage = Usage(input_tokens=123_456_789_012, output_tokens=987_654_321_098)
    # The same sum in integers, in units of 1e-27 USD.
    exact = 123_456_789_012 * 123_456_789_012_345_678_901 + 987_654_321_098 * 987_654_321 * 10**13
    assert len(str(exact)) > 28  # beyond the default decimal context's precision
    result = cost(usage, price)
    assert result is not None
    assert Fraction(result) == Fraction(exact, 10**27)


def test_embeddings_with_no_output_cost_input_only() -> None:
    price = Price(Decimal("0.02"), Decimal("0"))
    assert cost(Usage(input_tokens=8, output_tokens=0), price) == Decimal("0.00000016")


def test_unpriced_model_costs_none() -> None:
    assert cost(Usage(1000, 500), None) is None


def test_free_model_costs_zero() -> None:
    assert cost(Usage(1000, 500), Price(Decimal(0), Decimal(0))) == Decimal(0)


def test_cached_input_is_priced_at_cache_read() -> None:
    usage = Usage(input_tokens=2000, output_tokens=100, cache_read_tokens=1500)
    # 500 · 2.50 + 1500 · 1.25 + 100 · 10.00 = 1250 + 1875 + 1000 = 4125 per 1M
    assert cost(usage, CACHED) == Decimal("0.004125")


def test_cache_writes_are_priced_at_cache_write() -> None:
    usage = Usage(input_tokens=1000, output_tokens=0, cache_read_tokens=200, cache_write_tokens=300)
    # 500 · 2.50 + 200 · 1.25 + 300 · 3.75 = 1250 + 250 + 1125 = 2625 per 1M
    assert cost(usage, CACHED) == Decimal("0.002625")


def test_cached_tokens_without_a_cache_price_are_plain_input() -> None:
    usage = Usage(input_tokens=2000, output_tokens=0, cache_read_tokens=1500, cache_write_tokens=1)
    assert cost(usage, MINI) == cost(Usage(2000, 0), MINI) == Decimal("0.0003")


def test_cache_price_without_reported_cache_tokens_prices_all_input_plainly() -> None:
    assert cost(Usage(2000, 0), CACHED) == Decimal("0.005")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("1E-7"), "0.0000001"),
        (Decimal("0.00045000"), "0.00045"),
        (Decimal("2.50"), "2.5"),
        (Decimal("3"), "3"),
        (Decimal("1E+3"), "1000"),
        (Decimal("0E-8"), "0"),
        (Decimal("-0"), "0"),
        (Decimal("1.5E-12"), "0.0000000000015"),
        (Decimal("120.000"), "120"),
    ],
)
def test_format_usd_is_a_plain_decimal_without_exponent(value: Decimal, text: str) -> None:
    assert format_usd(value) == text


@pytest.mark.parametrize("value", [Decimal("NaN"), Decimal("Infinity")])
def test_format_usd_refuses_non_finite_amounts(value: Decimal) -> None:
    with pytest.raises(ValueError):
        format_usd(value)


def test_usd_json_number_embeds_an_exact_plain_number() -> None:
    body = msgspec.json.encode({"usage": {"cost": usd_json_number(Decimal("1E-7"))}})
    assert body == b'{"usage":{"cost":0.0000001}}'
    decoded = msgspec.json.decode(body)
    assert decoded["usage"]["cost"] == pytest.approx(1e-7)


def test_a_prompt_above_a_tier_pays_its_prices_for_every_token() -> None:
    price = Price(
        input=D("1.25"),
        output=D("10"),
        cache_read=D("0.125"),
        tiers=(
            PriceTier(200_000, input=D("2.5"), output=D("15"), cache_read=D("0.25")),
            PriceTier(1_000_000, input=D("5"), output=D("30")),
        ),
    )
    at_threshold = Usage(input_tokens=200_000, output_tokens=1_000, cache_read_tokens=50_000)
    assert (
        cost(at_threshold, price)
        == (150_000 * D("1.25") + 1_000 * D("10") + 50_000 * D("0.125")) / 1_000_000
    )
    above = Usage(input_tokens=200_001, output_tokens=1_000, cache_read_tokens=50_000)
    assert (
        cost(above, price)
        == (150_001 * D("2.5") + 1_000 * D("15") + 50_000 * D("0.25")) / 1_000_000
    )
    # The second tier has no cache price: its cached tokens are plain input there.
    far = Usage(input_tokens=1_000_001, output_tokens=10, cache_read_tokens=1)
    assert cost(far, price) == (1_000_001 * D("5") + 10 * D("30")) / 1_000_000
    assert price.combined == D("11.25")  # the ranker's list price is the base tier's


def test_tiers_in_yaml_are_priced_and_must_ascend() -> None:
    yaml = """
auth: {allowUnauthenticated: true}
providers: [{id: p, adapter: custom, baseUrl: "http://127.0.0.1:9/v1"}]
models:
  - id: long
    provider: p
    price:
      input: 1
      output: 2
      tiers: [{aboveInputTokens: 128000, input: 2, output: 4}]
configurations: [{id: c, mode: fixed, model: long}]
"""
    (model,) = load_config_text(yaml).models
    assert model.price is not None
    assert cost(Usage(input_tokens=128_001, output_tokens=1), model.price) == D("0.256006")
    bad = yaml.replace(
        "[{aboveInputTokens: 128000, input: 2, output: 4}]",
        "[{aboveInputTokens: 128000, input: 2, output: 4},"
        " {aboveInputTokens: 100, input: 3, output: 5}]",
    )
    with pytest.raises(ConfigError) as raised:
        load_config_text(bad)
    assert raised.value.problems == [
        "models[0].price.tiers[1].aboveInputTokens: must be above the previous tier's (128000):"
        " tiers go in ascending order"
    ]
