"""Phase 2: schema Structs -> the resolved ``GatewayConfig``.

Resolves references (model -> provider, configuration -> model, fallback ->
configuration, key -> configuration), finds fallback cycles and checks the
rules that span fields. Pure: no I/O, no environment.
"""

from __future__ import annotations

import dataclasses
import re
from importlib.util import find_spec
from typing import Any
from urllib.parse import urlsplit

from gateway.config.auth import resolve_auth, resolve_teams
from gateway.config.errors import Problems, child, item
from gateway.config.references import Ids, failed_ids, parsed_entries
from gateway.config.schema import (
    CacheStoreSchema,
    ConfigurationSchema,
    CriteriaSchema,
    FileSchema,
    ModelSchema,
    PriceSchema,
    ProviderSchema,
    RedisSchema,
)
from gateway.config.sections import resolve_sections, to_budget, to_rate_limit
from gateway.domain.model import (
    AdapterType,
    CacheSpec,
    Configuration,
    ConfigurationMode,
    Criteria,
    Model,
    Price,
    PriceTier,
    Provider,
)
from gateway.domain.settings import CacheStoreSettings, GatewayConfig, RedisSettings

ANTHROPIC_DEFAULT_VERSION = "2023-06-01"
# Where an adapter's API is when the provider names no baseUrl.
DEFAULT_BASE_URLS = {AdapterType.GEMINI: "https://generativelanguage.googleapis.com/v1beta"}
# Claude on Vertex AI takes anthropic_version in the body, with Vertex's own value.
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
_LOCATION = re.compile(r"[a-z][a-z0-9-]{1,62}")
CONFIG_PRICE = "config"  # price_source of a model priced in the YAML


def build(file: FileSchema, raw: Any, problems: Problems) -> GatewayConfig | None:
    """The resolved configuration, or None when ``problems`` has any problem."""
    providers, provider_ids = _resolve_providers(file.providers, raw, problems)
    models, model_ids = _resolve_models(file.models, raw, provider_ids, problems)
    models = _catalog_priced(models, providers)
    configurations, configuration_ids = _resolve_configurations(file, raw, model_ids, problems)
    _check_fallbacks(file.configurations, configuration_ids, problems)
    teams, team_ids = resolve_teams(file.teams, configuration_ids, problems)
    auth = resolve_auth(file.auth, configuration_ids, problems, team_ids)
    redis = _resolve_redis(file.redis, problems)
    cache = _resolve_cache_store(file.cache, redis, problems)
    sections = resolve_sections(file)
    if problems:
        return None
    return GatewayConfig(
        server=sections.server,
        database=sections.database,
        telemetry=sections.telemetry,
        expose_models=file.expose_models,
        cache=cache,
        redis=redis,
        budgets=sections.budgets,
        rate_limits=sections.rate_limits,
        auth=auth,
        routing=sections.routing,
        health=sections.health,
        circuit_breaker=sections.circuit_breaker,
        providers=providers,
        models=tuple(models),
        configurations=configurations,
        teams=teams,
    )


def _resolve_providers(
    entries: list[ProviderSchema], raw: Any, problems: Problems
) -> tuple[dict[str, Provider], Ids]:
    ids = Ids("provider", problems, failed_ids(raw, ["providers"], entries))
    providers: dict[str, Provider] = {}
    for index, entry in parsed_entries(entries):
        path = item("providers", index)
        if ids.claim(path, entry.id):
            providers[entry.id] = _provider(entry, path, problems)
    return providers, ids


def _provider(entry: ProviderSchema, path: str, problems: Problems) -> Provider:
    base_url = entry.base_url or DEFAULT_BASE_URLS.get(entry.adapter, "")
    if entry.adapter is AdapterType.BEDROCK:
        base_url = _bedrock_base_url(entry, path, problems)
    elif entry.region is not None:
        problems.add(child(path, "region"), "only adapter 'bedrock' takes a region")
    if entry.adapter not in (AdapterType.ECHO, AdapterType.BEDROCK, AdapterType.VERTEX) or (
        entry.adapter is AdapterType.VERTEX and entry.base_url
    ):
        if entry.base_url is None and not base_url:
            problems.add(child(path, "baseUrl"), f"required for adapter '{entry.adapter}'")
        elif not _is_http_url(base_url):
            problems.add(child(path, "baseUrl"), "must be an http:// or https:// URL")
    api_version = entry.api_version
    if entry.adapter is AdapterType.AZURE_OPENAI and api_version is None:
        problems.add(child(path, "apiVersion"), "required for adapter 'azure_openai'")
    if entry.adapter is AdapterType.ANTHROPIC and api_version is None:
        api_version = ANTHROPIC_DEFAULT_VERSION
    if entry.adapter is AdapterType.VERTEX:
        base_url = _vertex(entry, path, problems) or base_url
        api_version = api_version or VERTEX_ANTHROPIC_VERSION
    elif entry.project or entry.location or entry.credentials_file:
        problems.add(path, "project, location and credentialsFile are for adapter 'vertex' only")
    responses_api = entry.responses_api
    if responses_api is None:
        responses_api = entry.adapter in _NATIVE_RESPONSES
    elif responses_api and entry.adapter in _NO_RESPONSES:
        problems.add(
            child(path, "responsesApi"), f"adapter '{entry.adapter}' offers no Responses API"
        )
    return Provider(
        id=entry.id,
        adapter=entry.adapter,
        base_url=base_url,
        api_key=entry.api_key or None,  # an empty key is no key
        priority=entry.priority,
        timeout_seconds=entry.timeout_seconds,
        max_retries=entry.max_retries,
        stream_usage=entry.stream_usage,
        api_version=api_version,
        responses_api=responses_api,
        region=entry.region,
        project=entry.project,
        location=entry.location,
        credentials_file=entry.credentials_file,
    )


# Bedrock Runtime's endpoint in a region (AWS's naming rule; baseUrl overrides it).
BEDROCK_URL = "https://bedrock-runtime.{region}.amazonaws.com"


def _bedrock_base_url(entry: ProviderSchema, path: str, problems: Problems) -> str:
    if find_spec("botocore") is None:  # looked for, not imported: serving imports it
        problems.add(
            child(path, "adapter"),
            "adapter 'bedrock' needs botocore (AWS signing and event streams), which is not "
            "installed: pip install 'llm-gateway[bedrock]'",
        )
    if entry.region is None:
        problems.add(child(path, "region"), "required for adapter 'bedrock' (e.g. us-east-1)")
        return ""
    if entry.base_url is None:
        return BEDROCK_URL.format(region=entry.region)
    if not _is_http_url(entry.base_url):
        problems.add(child(path, "baseUrl"), "must be an http:// or https:// URL")
    return entry.base_url


def _has_module(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ImportError:  # its parent package is missing
        return False


def _vertex(entry: ProviderSchema, path: str, problems: Problems) -> str | None:
    """A vertex provider's checks, and its base URL when it names none: the location's
    regional endpoint (``global``: the global one)."""
    if not _has_module("google.auth"):  # looked for, not imported: a call imports it
        problems.add(
            child(path, "adapter"),
            "adapter 'vertex' needs google-auth (Google Cloud credentials), which is not "
            "installed: pip install 'llm-gateway[vertex]'",
        )
    if entry.project is None:
        problems.add(child(path, "project"), "required for adapter 'vertex'")
    if entry.location is None:
        problems.add(child(path, "location"), "required for adapter 'vertex'")
        return None
    if not _LOCATION.fullmatch(entry.location):
        problems.add(
            child(path, "location"), "must be a Google Cloud location such as us-central1 or global"
        )
        return None
    if entry.base_url is not None:
        return None
    if entry.location == "global":
        return "https://aiplatform.googleapis.com/v1"
    return f"https://{entry.location}-aiplatform.googleapis.com/v1"


# Adapters whose API offers /responses (docs/responses.md); the others translate to chat.
_NATIVE_RESPONSES = frozenset({AdapterType.OPENAI, AdapterType.AZURE_OPENAI})
# Adapters that build their own requests: a native Responses call cannot reach them.
_NO_RESPONSES = frozenset(
    {
        AdapterType.ANTHROPIC,
        AdapterType.GEMINI,
        AdapterType.VERTEX,
        AdapterType.ECHO,
        AdapterType.BEDROCK,
    }
)


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _resolve_models(
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


def _catalog_priced(models: list[Model], providers: dict[str, Provider]) -> list[Model]:
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


def _resolve_configurations(
    file: FileSchema, raw: Any, models: Ids, problems: Problems
) -> tuple[dict[str, Configuration], Ids]:
    """Explicit configurations in YAML order, then (exposeModels) one per model.

    An explicit configuration whose id equals a model id wins over the
    exposed one: it is the more specific statement.
    """
    failed = failed_ids(raw, ["configurations"], file.configurations)
    if file.expose_models:
        failed |= failed_ids(raw, ["models"], file.models)
    ids = Ids("configuration", problems, failed)
    configurations: dict[str, Configuration] = {}
    for index, entry in parsed_entries(file.configurations):
        path = item("configurations", index)
        if ids.claim(path, entry.id):
            configurations[entry.id] = _configuration(entry, path, models, problems)
    if file.expose_models:
        for index, model in parsed_entries(file.models):
            if model.id not in configurations and model.id not in failed:
                configurations[model.id] = Configuration(
                    id=model.id, mode=ConfigurationMode.FIXED, model=model.id
                )
                ids.claim(item("models", index), model.id)
    return configurations, ids


def _configuration(
    entry: ConfigurationSchema, path: str, models: Ids, problems: Problems
) -> Configuration:
    if entry.mode is ConfigurationMode.FIXED:
        if entry.model is None:
            problems.add(child(path, "model"), "required when mode is 'fixed'")
        else:
            models.check(child(path, "model"), entry.model)
        if entry.criteria is not None:
            problems.add(child(path, "criteria"), "not allowed when mode is 'fixed'")
    elif entry.model is not None:
        problems.add(child(path, "model"), "not allowed when mode is 'criteria'")
    return Configuration(
        id=entry.id,
        mode=entry.mode,
        model=entry.model,
        policy_mode=entry.policy_mode,
        fallback=tuple(entry.fallback),
        criteria=_criteria(entry.criteria),
        budget=to_budget(entry.budget),
        cache=_cache_spec(entry),
        operation_capability_enforcement=entry.operation_capability_enforcement,
        rate_limit=to_rate_limit(entry.rate_limit),
    )


def _cache_spec(entry: ConfigurationSchema) -> CacheSpec | None:
    if entry.cache is None:
        return None
    return CacheSpec(ttl_seconds=entry.cache.ttl_seconds, scope=entry.cache.scope.value)


def _criteria(entry: CriteriaSchema | None) -> Criteria:
    if entry is None:
        return Criteria()
    return Criteria(
        capabilities=frozenset(entry.capabilities),
        adapter_types=frozenset(entry.adapter_types) if entry.adapter_types is not None else None,
        min_context_length=entry.min_context_length,
        max_cost_input=entry.max_cost_input,
        prefer_lowest_cost=entry.prefer_lowest_cost,
    )


def _check_fallbacks(entries: list[ConfigurationSchema], known: Ids, problems: Problems) -> None:
    """Every fallback names a configuration other than its own; no cycles."""
    edges: dict[str, list[tuple[str, str]]] = {}  # id -> [(target, path)]
    for index, entry in parsed_entries(entries):
        path = child(item("configurations", index), "fallback")
        targets = edges.setdefault(entry.id, [])
        for position, target in enumerate(entry.fallback):
            target_path = item(path, position)
            if target == entry.id:
                problems.add(target_path, "a configuration cannot fall back to itself")
            elif known.check(target_path, target):
                targets.append((target, target_path))
    _report_cycles(edges, problems)


def _report_cycles(edges: dict[str, list[tuple[str, str]]], problems: Problems) -> None:
    """Depth-first search; each edge back onto the current trail closes a cycle.

    Iterative, and every configuration is explored once, so a long chain or a
    dense fallback graph costs linear time, not a path per combination.
    """
    done: set[str] = set()
    for start in edges:
        if start in done:
            continue
        trail = [start]
        pending = [iter(edges.get(start, []))]
        while pending:
            for target, path in pending[-1]:
                if target in trail:
                    cycle = " -> ".join([*trail[trail.index(target) :], target])
                    problems.add(path, f"fallback cycle: {cycle}")
                elif target not in done:
                    trail.append(target)
                    pending.append(iter(edges.get(target, [])))
                    break
            else:
                pending.pop()
                done.add(trail.pop())


REDIS_SCHEMES = ("redis", "rediss", "unix")


def _resolve_redis(entry: RedisSchema, problems: Problems) -> RedisSettings:
    if entry.url is not None and urlsplit(entry.url).scheme not in REDIS_SCHEMES:
        problems.add("redis.url", "must be a redis://, rediss:// or unix:// URL")
    return RedisSettings(url=entry.url)


def _resolve_cache_store(
    entry: CacheStoreSchema, redis: RedisSettings, problems: Problems
) -> CacheStoreSettings:
    # cache.redisUrl, when given, wins; else the deployment's redis.url serves the cache too.
    url = entry.redis_url if entry.redis_url is not None else redis.url
    if entry.store.value == "redis" and url is None:
        problems.add("cache.redisUrl", "required when store is 'redis' and redis.url is not set")
    return CacheStoreSettings(store=entry.store.value, redis_url=url)
