"""The built-in price catalog (gateway/catalog.py) against genai-prices' own figures."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest
from genai_prices import Usage as CatalogUsage
from genai_prices import calc_price

from gateway.catalog import data_version, lookup
from gateway.config.loader import load_config_text
from gateway.domain.model import AdapterType
from gateway.domain.usage import Usage
from gateway.pricing import cost

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("adapter", "provider_id", "name"),
    [
        (AdapterType.OPENAI, "openai", "gpt-4o-mini"),
        (AdapterType.OPENAI, "openai", "gpt-4o"),
        (AdapterType.ANTHROPIC, "anthropic", "claude-sonnet-4-5"),
        (AdapterType.GEMINI, "google", "gemini-2.5-flash"),
        (AdapterType.VERTEX, "google", "gemini-2.5-pro"),
        (AdapterType.VERTEX, "anthropic", "claude-sonnet-4-5"),
    ],
)
def test_a_catalog_price_costs_what_genai_prices_says(
    adapter: AdapterType, provider_id: str, name: str
) -> None:
    found = lookup(adapter, name)
    assert found is not None
    assert found.source == f"catalog:{data_version()}"
    usage = Usage(input_tokens=12_345, output_tokens=678, cache_read_tokens=2_000)
    ours = cost(usage, found.price)
    theirs = calc_price(
        CatalogUsage(input_tokens=12_345, output_tokens=678, cache_read_tokens=2_000),
        name,
        provider_id=provider_id,
    ).total_price
    assert ours is not None
    assert abs(ours - theirs) <= Decimal("1e-12")


@pytest.mark.parametrize("prompt", [199_999, 200_000, 200_001, 900_000])
def test_a_long_context_tier_costs_what_genai_prices_says_either_side_of_its_threshold(
    prompt: int,
) -> None:
    found = lookup(AdapterType.ANTHROPIC, "claude-sonnet-4-5")
    assert found is not None
    (tier,) = found.price.tiers
    assert tier.above_input_tokens == 200_000 and tier.input > found.price.input
    usage = Usage(
        input_tokens=prompt, output_tokens=4_321, cache_read_tokens=10_000, cache_write_tokens=500
    )
    ours = cost(usage, found.price)
    theirs = calc_price(
        CatalogUsage(
            input_tokens=prompt,
            output_tokens=4_321,
            cache_read_tokens=10_000,
            cache_write_tokens=500,
        ),
        "claude-sonnet-4-5",
        provider_id="anthropic",
    ).total_price
    assert ours is not None
    assert abs(ours - theirs) <= Decimal("1e-12")


def test_a_model_the_catalog_does_not_know_or_a_local_adapter_has_no_price() -> None:
    assert lookup(AdapterType.OPENAI, "no-such-model-anywhere") is None
    assert lookup(AdapterType.OLLAMA, "gpt-4o") is None  # local: no list price
    assert lookup(AdapterType.CUSTOM, "gpt-4o") is None  # any server: no list price


def test_a_yaml_price_wins_and_an_unpriced_model_takes_the_catalogs() -> None:
    config = load_config_text(
        """
auth: {allowUnauthenticated: true}
providers:
  - {id: oa, adapter: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: k}
models:
  - {id: priced, provider: oa, name: gpt-4o, price: {input: 1, output: 2}}
  - {id: listed, provider: oa, name: gpt-4o}
  - {id: unknown, provider: oa, name: house-model}
""",
        environ={},
    )
    models = {model.id: model for model in config.models}
    assert models["priced"].price is not None and models["priced"].price.input == 1
    assert models["priced"].price_source == "config"
    listed = lookup(AdapterType.OPENAI, "gpt-4o")
    assert listed is not None
    assert models["listed"].price == listed.price
    assert models["listed"].price_source == f"catalog:{data_version()}"
    assert models["unknown"].price is None and models["unknown"].price_source is None


def test_a_config_that_prices_every_model_never_loads_the_catalog(tmp_path: Path) -> None:
    """Not even the module that would start the catalog's child process."""
    config = tmp_path / "gateway.yaml"
    config.write_text(
        """
auth: {allowUnauthenticated: true}
providers:
  - {id: oa, adapter: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: k}
models:
  - {id: priced, provider: oa, name: gpt-4o, price: {input: 1, output: 2}}
"""
    )
    probe = (
        "import sys; from gateway.config.loader import load_config; "
        f"load_config({str(config)!r}); print('gateway.catalog' in sys.modules)"
    )
    ran = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert ran.stdout.strip() == "False"
