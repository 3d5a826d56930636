"""`gateway prices --config FILE`: each model's price and its source, and the models
neither the YAML nor the catalog prices (docs/configuration.md#prices-the-built-in-catalog)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gateway.catalog import data_version
from gateway.cli import main

CONFIG = """
auth: {allowUnauthenticated: true}
providers:
  - {id: oa, adapter: openai, baseUrl: "http://127.0.0.1:9/v1", apiKey: k}
  - {id: claude, adapter: anthropic, baseUrl: "http://127.0.0.1:9/anthropic/v1", apiKey: k}
models:
  - {id: priced, provider: oa, name: gpt-4o, price: {input: 1, output: 2.5}}
  - {id: mini, provider: oa, name: gpt-4o-mini}
  - {id: sonnet, provider: claude, name: claude-sonnet-4-5}
  - {id: house, provider: oa, name: house-model}
configurations:
  - {id: chat, mode: fixed, model: priced}
"""


def test_prices_prints_each_models_price_and_source_and_the_unknown_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(CONFIG)
    assert main(["prices", "--config", str(config)]) == 0
    lines = capsys.readouterr().out.splitlines()
    catalog = f"catalog:{data_version()}"
    assert lines == [
        "priced: input 1, output 2.5 USD per 1M tokens (config)",
        f"mini: input 0.15, output 0.6, cache read 0.075 USD per 1M tokens ({catalog})",
        "sonnet: input 3, output 15, cache read 0.3, cache write 3.75 USD per 1M tokens; "
        "above 200000 prompt tokens: input 6, output 22.5, cache read 0.6, cache write 7.5 "
        f"({catalog})",
        "not in the catalog (unpriced): house",
    ]


def test_prices_exits_1_on_a_config_with_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("models: [{id: m, provider: ghost}]\n")
    assert main(["prices", "--config", str(config)]) == 1
    assert "models[0].provider" in capsys.readouterr().err


def test_check_warns_about_a_yaml_price_that_differs_from_the_catalogs_and_still_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "gateway.yaml"
    same = "  - {id: same, provider: oa, name: gpt-4o, price: {input: 2.5, output: 10, "
    same += "cacheRead: 1.25}}\n"  # the catalog's own: no warning
    config.write_text(CONFIG.replace("configurations:", same + "configurations:"))
    assert main(["check", "--config", str(config)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{config}: warning: models[0].price: differs from the catalog's price of openai/gpt-4o "
        f"(catalog:{data_version()}: input 2.5, output 10, cache read 1.25 USD per 1M tokens); "
        "the YAML price is the one used",
        f"{config}: OK",
    ]
