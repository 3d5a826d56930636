"""What ``gateway check`` warns about in a configuration that loads: settings that work
but probably do not do what their author meant. A warning never fails the check."""

from __future__ import annotations

from gateway.domain.model import Price
from gateway.domain.settings import GatewayConfig


def config_warnings(config: GatewayConfig) -> list[str]:
    """Every warning, each ``yaml.path: message`` like a problem."""
    return (
        _per_process_rate_limits(config)
        + _prices_differing_from_the_catalog(config)
        + _writer_process_on_a_memory_database(config)
    )


def _writer_process_on_a_memory_database(config: GatewayConfig) -> list[str]:
    """``telemetry.writer: process`` (the default) on an in-memory SQLite database: no
    other process can open it, so the writer runs on the serving loop."""
    url = config.database.url
    memory = url.startswith("sqlite") and (
        url.endswith("://") or ":memory:" in url or "mode=memory" in url
    )
    if not (memory and config.telemetry.enabled and config.telemetry.writer == "process"):
        return []
    return [
        "telemetry.writer: the database is an in-memory SQLite database, which no other "
        "process can open: the telemetry writer runs on the serving loop (inline) "
        "(docs/configuration.md, 'telemetry')"
    ]


def _per_process_rate_limits(config: GatewayConfig) -> list[str]:
    """Several processes without Redis: each counts ``rateLimit`` alone."""
    if config.redis.url is not None:
        return []
    workers = config.server.workers
    shared = not config.database.url.startswith("sqlite")
    if workers <= 1 and not shared:
        return []
    why = f"server.workers is {workers}" if workers > 1 else "the database is shared"
    return [
        f"redis.url: not set while {why}: rate limits (rateLimit) are counted by each "
        "process alone, so N processes admit up to N times a limit "
        "(docs/operations.md, 'Rate limits')"
    ]


def _prices_differing_from_the_catalog(config: GatewayConfig) -> list[str]:
    from gateway.catalog import prices  # the catalog is read only by the check

    yaml_priced = [
        (model, (config.providers[model.provider].adapter, model.name))
        for model in config.models
        if model.price is not None and model.provider in config.providers
    ]
    if not yaml_priced:
        return []
    found = prices(wanted for _, wanted in yaml_priced)
    warned: list[str] = []
    for model, wanted in yaml_priced:
        entry = found.get(wanted)
        if entry is None or model.price is None or model.price == entry.price:
            continue
        warned.append(
            f"models[{model.order}].price: differs from the catalog's price of "
            f"{entry.provider_id}/{entry.model_id} ({entry.source}: "
            f"{describe(entry.price)}); the YAML price is the one used"
        )
    return warned


def describe(price: Price) -> str:
    """``input 3, output 15, cache read 0.3 USD per 1M tokens; above 200000 prompt
    tokens: input 6, …``"""
    text = _figures(price.input, price.output, price.cache_read, price.cache_write)
    text += " USD per 1M tokens"
    for tier in price.tiers:
        figures = _figures(tier.input, tier.output, tier.cache_read, tier.cache_write)
        text += f"; above {tier.above_input_tokens} prompt tokens: {figures}"
    return text


def _figures(*values: object) -> str:  # the four prices, in Price's order
    names = ("input", "output", "cache read", "cache write")
    pairs = zip(names, values, strict=True)
    return ", ".join(f"{name} {value}" for name, value in pairs if value is not None)
