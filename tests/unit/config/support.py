"""Helpers for the config loader's tests."""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import load_config_text
from gateway.domain.settings import GatewayConfig

MINIMAL = """
providers:
  - {id: demo, adapter: echo}
models:
  - {id: m1, provider: demo}
"""


def load(text: str, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    return load_config_text(textwrap.dedent(text), environ or {})


def problems_of(text: str, environ: Mapping[str, str] | None = None) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load(text, environ)
    return caught.value.problems


def with_minimal(extra: str) -> str:
    """MINIMAL followed by more top-level YAML."""
    return MINIMAL + textwrap.dedent(extra)
