"""Phase 2: schema Structs -> the resolved ``GatewayConfig``.

Resolves references (model -> provider, configuration -> model, fallback ->
configuration, key -> configuration), finds fallback cycles and checks the
rules that span fields. Pure: no I/O, no environment. Providers
(gateway/config/providers.py), models (models.py) and configurations with their fallbacks
(configurations.py) are each resolved in their own module.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from gateway.config.auth import resolve_auth, resolve_teams
from gateway.config.configurations import check_fallbacks, resolve_configurations
from gateway.config.errors import Problems
from gateway.config.models import catalog_priced, resolve_models
from gateway.config.providers import resolve_providers
from gateway.config.schema import CacheStoreSchema, FileSchema, RedisSchema
from gateway.config.sections import resolve_sections
from gateway.domain.settings import CacheStoreSettings, GatewayConfig, RedisSettings


def build(file: FileSchema, raw: Any, problems: Problems) -> GatewayConfig | None:
    """The resolved configuration, or None when ``problems`` has any problem."""
    providers, provider_ids = resolve_providers(file.providers, raw, problems)
    models, model_ids = resolve_models(file.models, raw, provider_ids, problems)
    models = catalog_priced(models, providers)
    configurations, configuration_ids = resolve_configurations(file, raw, model_ids, problems)
    check_fallbacks(file.configurations, configuration_ids, problems)
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
