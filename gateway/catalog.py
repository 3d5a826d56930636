"""The built-in price catalog: genai-prices' bundled data, read with no network.

A model whose YAML has no ``price`` takes the catalog's price for its provider's
adapter and its upstream name (docs/configuration.md#prices-the-built-in-catalog).
The catalog (genai-prices, its data and pydantic: about 30 MB resident) is read in a
short-lived child process (``prices``), so a serving process never holds it, and only
when such a model is configured: a configuration that prices every model never
starts the child.

Tiered prices (a long-context price chosen by the prompt's size) become the Price's
tiers: above a threshold, the tier's price applies to all the call's tokens, as
genai-prices and the providers compute it.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

import msgspec

from gateway.domain.model import AdapterType, Price, PriceTier

# The catalog's provider id for each adapter. Not custom (any server, often self-hosted),
# ollama (local) or echo (built in): they have no list price.
_PROVIDER_IDS: dict[AdapterType, str] = {
    AdapterType.OPENAI: "openai",
    AdapterType.AZURE_OPENAI: "azure",
    AdapterType.ANTHROPIC: "anthropic",
    AdapterType.GEMINI: "google",
    AdapterType.VERTEX: "google",  # its Claude models: Anthropic's prices (_provider_id)
    AdapterType.OPENROUTER: "openrouter",
    AdapterType.GROQ: "groq",
    AdapterType.TOGETHER: "together",
    AdapterType.MISTRAL: "mistral",
    AdapterType.BEDROCK: "aws",
}


log = logging.getLogger(__name__)
_CHILD_TIMEOUT_SECONDS = 60.0
Wanted = tuple[AdapterType, str]  # a provider's adapter, the model's upstream name


@dataclass(frozen=True, slots=True)
class CatalogPrice:
    price: Price
    source: str  # catalog:<data version>
    provider_id: str  # the catalog's provider and model the price is of
    model_id: str


@cache
def data_version() -> str:
    """The version of the catalog's data: the installed genai-prices release."""
    return metadata.version("genai-prices")


def source() -> str:
    return f"catalog:{data_version()}"


# What the child found, per process: a reload with the same models starts no child.
_found: dict[Wanted, CatalogPrice | None] = {}
# Parent and child speak JSON: (adapter, name) pairs in, CatalogPrice or null out
# (Decimals as strings, so exact).
_ENCODER = msgspec.json.Encoder()
_ANSWERS = msgspec.json.Decoder(list[CatalogPrice | None])


def prices(wanted: Iterable[Wanted]) -> dict[Wanted, CatalogPrice]:
    """The catalog's price of each (adapter, name) it knows, looked up in a child process.

    A child that fails leaves those models unpriced, with a warning in the log.
    """
    asked = {pair for pair in wanted if pair[0] in _PROVIDER_IDS}
    missing = sorted(pair for pair in asked if pair not in _found)
    if missing:
        _found.update(_lookup_in_child(missing))
    return {pair: found for pair in asked if (found := _found.get(pair)) is not None}


def _lookup_in_child(missing: list[Wanted]) -> dict[Wanted, CatalogPrice | None]:
    root = str(Path(__file__).resolve().parents[1])  # this checkout's gateway package
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
    request = _ENCODER.encode([[adapter.value, name] for adapter, name in missing])
    try:
        ran = subprocess.run(
            [sys.executable, "-m", "gateway.catalog"],
            input=request,
            capture_output=True,
            env=env,
            timeout=_CHILD_TIMEOUT_SECONDS,
            check=True,
        )
        answers = _ANSWERS.decode(ran.stdout)
    except (OSError, subprocess.SubprocessError, msgspec.DecodeError) as exc:
        log.warning("the price catalog could not be read (%s): those models stay unpriced", exc)
        return {}
    return dict(zip(missing, answers, strict=True))


def _answer_lookups() -> None:
    """The child: (adapter, name) pairs as JSON on stdin, their prices as JSON on stdout."""
    pairs = msgspec.json.decode(sys.stdin.buffer.read(), type=list[tuple[str, str]])
    answers = [lookup(AdapterType(adapter), name) for adapter, name in pairs]
    sys.stdout.buffer.write(_ENCODER.encode(answers))


def _provider_id(adapter: AdapterType, name: str) -> str:
    if adapter is AdapterType.VERTEX and name.startswith("claude"):
        return "anthropic"  # Claude on Vertex AI is billed at Anthropic's list prices
    return _PROVIDER_IDS[adapter]


def lookup(adapter: AdapterType, name: str) -> CatalogPrice | None:
    """The catalog's price of model ``name`` served through ``adapter``, or None when
    the catalog does not know it (or has no token price for it)."""
    if adapter not in _PROVIDER_IDS:
        return None
    from genai_prices import data_snapshot  # deferred: only unpriced models pay for it

    snapshot = data_snapshot.get_snapshot()
    try:
        provider, model = snapshot.find_provider_model(
            name, None, _provider_id(adapter, name), None
        )
    except LookupError:
        return None
    prices = model.prices
    standard = prices if not isinstance(prices, list) else _current(model)
    fields = [getattr(standard, f"{name}_mtok", None) for name in _FIELDS]
    input_base, output_base, read_base, write_base = (_at(value, 0) for value in fields)
    if input_base is None or output_base is None:
        return None
    starts = sorted({tier.start for value in fields for tier in getattr(value, "tiers", ())})
    tiers = []
    for start in starts:
        # A prompt of start + 1 tokens is the first to pay this tier's prices.
        tier_input, tier_output, tier_read, tier_write = (_at(v, start + 1) for v in fields)
        tiers.append(
            PriceTier(
                above_input_tokens=start,
                input=input_base if tier_input is None else tier_input,
                output=output_base if tier_output is None else tier_output,
                cache_read=tier_read,
                cache_write=tier_write,
            )
        )
    return CatalogPrice(
        price=Price(input_base, output_base, read_base, write_base, tuple(tiers)),
        source=source(),
        provider_id=str(provider.id),
        model_id=str(model.id),
    )


def _current(model: Any) -> Any:
    """The price in force now, of a model whose price changed over time."""
    from datetime import UTC, datetime

    return model.get_prices(datetime.now(tz=UTC))


_FIELDS = ("input", "output", "cache_read", "cache_write")


def _at(value: Any, input_tokens: int) -> Decimal | None:
    """A field's price for a prompt of ``input_tokens``: a plain price, or a
    TieredPrices' highest tier whose start the prompt passes (its base otherwise)."""
    if value is None or isinstance(value, Decimal):
        return value
    price = getattr(value, "base", None)
    for tier in getattr(value, "tiers", ()):  # ascending
        if input_tokens > tier.start:
            price = tier.price
    return price if isinstance(price, Decimal) else None


if __name__ == "__main__":
    _answer_lookups()
