"""Phase 2 for ``models``: each entry checked and resolved to a ``Model``, priced from the
YAML or, when it names no price, from the catalog. Pure: no I/O but the packaged catalog.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gateway.config.errors import Problems, child, item
from gateway.config.references import Ids, failed_ids, parsed_entries
from gateway.config.schema import ModelSchema, PriceSchema
from gateway.config.sections import to_rate_limit
from gateway.domain.model import Model, Price, PriceTier, Provider

CONFIG_PRICE = "config"  # price_source of a model priced in the YAML


def resolve_models(
    entries: list[ModelSchema], raw: Any, providers: Ids, problems: Problems
) -> tuple[list[Model], Ids]:
    ids = Ids("model", problems, failed_ids(raw, ["models"], entries))
    models: list[Model] = []
    for index, entry in parsed_entries(entries):
        path = item("models", index)
        providers.check(child(path, "provider"), entry.provider)
        if entry.price is not None:
            _check_tiers(entry.price, child(path, "price"), problems)
        if ids.claim(path, entry.id):
            models.append(_model(entry, index))
    return models, ids


def _check_tiers(price: PriceSchema, path: str, problems: Problems) -> None:
    thresholds = [tier.above_input_tokens for tier in price.tiers]
    for index in range(1, len(thresholds)):
        if thresholds[index] <= thresholds[index - 1]:
            problems.add(
                child(item(child(path, "tiers"), index), "aboveInputTokens"),
                f"must be above the previous tier's ({thresholds[index - 1]}): "
                "tiers go in ascending order",
            )


def _model(entry: ModelSchema, index: int) -> Model:
    return Model(
        id=entry.id,
        provider=entry.provider,
        name=entry.name if entry.name is not None else entry.id,
        capabilities=frozenset(entry.capabilities),
        context_length=entry.context_length,
        max_output_tokens=entry.max_output_tokens,
        price=_price(entry.price),
        active=entry.active,
        default=entry.default,
        order=index,
        price_source=CONFIG_PRICE if entry.price is not None else None,
        rate_limit=to_rate_limit(entry.rate_limit),
    )


def catalog_priced(models: list[Model], providers: dict[str, Provider]) -> list[Model]:
    """A model with no YAML price takes the catalog's, when the catalog knows it."""
    wanted = {
        model.id: (providers[model.provider].adapter, model.name)
        for model in models
        if model.price is None and model.provider in providers
    }
    if not wanted:
        return models  # every model priced: the catalog is never read
    from gateway.catalog import prices  # deferred with it

    found = prices(wanted.values())
    priced: list[Model] = []
    for model in models:
        entry = found.get(wanted[model.id]) if model.id in wanted else None
        if entry is not None:
            model = dataclasses.replace(model, price=entry.price, price_source=entry.source)
        priced.append(model)
    return priced


def _price(entry: PriceSchema | None) -> Price | None:
    if entry is None:
        return None  # unpriced, which is not free
    return Price(
        input=entry.input,
        output=entry.output,
        cache_read=entry.cache_read,
        cache_write=entry.cache_write,
        tiers=tuple(
            PriceTier(
                above_input_tokens=tier.above_input_tokens,
                input=tier.input,
                output=tier.output,
                cache_read=tier.cache_read,
                cache_write=tier.cache_write,
            )
            for tier in entry.tiers
        ),
    )
