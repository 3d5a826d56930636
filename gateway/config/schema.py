"""Phase 1: the YAML's shape, as msgspec Structs (camelCase keys, unknown keys denied).

These mirror the file, not the domain: references are plain ids here and are
resolved in ``build.py``. Numeric bounds are ``Annotated`` markers read by
``convert.py`` (msgspec's own ``Meta`` bounds do not cover ``Decimal``).
Defaults are the ones docs/configuration.md lists.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

import msgspec

from gateway.domain.model import (
    AdapterType,
    Capability,
    ConfigurationMode,
    Enforcement,
    PolicyMode,
)


@dataclass(frozen=True, slots=True)
class Ge:
    """Value must be >= bound."""

    bound: int


@dataclass(frozen=True, slots=True)
class Gt:
    """Value must be > bound."""

    bound: int


@dataclass(frozen=True, slots=True)
class Le:
    """Value must be <= bound."""

    bound: int


@dataclass(frozen=True, slots=True)
class NonEmpty:
    """String must not be empty."""


@dataclass(frozen=True, slots=True)
class Identifier:
    """1-128 printable ASCII characters, no spaces: ids travel in response headers and keys."""

    max_length: int = 128


class HistoryStatistic(StrEnum):
    MEAN = "mean"
    P50 = "p50"
    P90 = "p90"


class StreamLatency(StrEnum):
    TTFT = "ttft"
    TOTAL = "total"


class LogFormat(StrEnum):
    TEXT = "text"
    JSON = "json"


class TelemetryWriterMode(StrEnum):
    PROCESS = "process"  # a writer process per serving process runs the statements
    INLINE = "inline"  # the serving loop runs them (an in-memory SQLite database needs it)


class CacheStore(StrEnum):
    DATABASE = "database"
    REDIS = "redis"


class CacheScope(StrEnum):
    CONFIGURATION = "configuration"  # one answer for every key allowed the configuration
    KEY = "key"  # the key's id joins the cache key


class OutagePolicy(StrEnum):
    ADMIT = "admit"
    REFUSE = "refuse"


Id = Annotated[str, NonEmpty(), Identifier()]
NonNegInt = Annotated[int, Ge(0)]
PosInt = Annotated[int, Gt(0)]
NonNegDecimal = Annotated[Decimal, Ge(0)]


class Section(msgspec.Struct, forbid_unknown_fields=True, rename="camel", kw_only=True):
    """Base of every mapping in the file."""


class ServerSchema(Section):
    host: Annotated[str, NonEmpty()] = "127.0.0.1"
    port: Annotated[int, Ge(0), Le(65535)] = 4000  # 0: an ephemeral port (tests)
    workers: Annotated[int, Ge(1)] = 1
    max_body_bytes: PosInt = 16_777_216
    request_timeout_seconds: Annotated[float, Gt(0)] = 600.0
    # What the gateway holds of one upstream answer: a whole one, one event of a stream.
    max_upstream_body_bytes: Annotated[int, Ge(65_536)] = 67_108_864
    max_upstream_event_bytes: Annotated[int, Ge(65_536)] = 8_388_608
    log_format: LogFormat = LogFormat.TEXT
    access_log: bool = True
    max_header_bytes: Annotated[int, Ge(1024)] = 65_536
    header_timeout_seconds: Annotated[float, Gt(0)] = 10.0
    idle_timeout_seconds: Annotated[float, Gt(0)] = 75.0
    max_connections: PosInt = 2048
    # Connections to the providers, all together; unset: as many as maxConnections, so a
    # call never waits for one (a client connection carries one call at a time).
    max_upstream_connections: PosInt | None = None
    # SIGTERM: /readyz answers 503 for drain seconds while calls are still served, then
    # the listener closes and running calls get up to grace seconds (gateway.api.drain).
    shutdown_drain_seconds: Annotated[float, Ge(0)] = 0.0
    shutdown_grace_seconds: Annotated[float, Gt(0)] = 30.0


class DatabaseSchema(Section):
    url: Annotated[str, NonEmpty()] = "sqlite+aiosqlite:///gateway.db"


class OtelProtocol(StrEnum):
    HTTP = "http/protobuf"
    GRPC = "grpc"


class OtelSchema(Section):
    enabled: bool = False
    endpoint: Annotated[str, NonEmpty()] | None = None  # else OTEL_EXPORTER_OTLP_* variables
    protocol: OtelProtocol | None = None  # else OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf
    headers: dict[str, str] | None = None  # else OTEL_EXPORTER_OTLP_HEADERS
    service_name: Annotated[str, NonEmpty()] | None = None  # else OTEL_SERVICE_NAME
    sample_ratio: Annotated[float, Ge(0), Le(1)] = 1.0
    capture_content: bool = False
    propagate_upstream: bool = True
    trace_url: Annotated[str, NonEmpty()] | None = None  # e.g. http://jaeger:16686/trace/{traceId}
    max_queue_spans: Annotated[int, Ge(1)] = 2048
    export_timeout_seconds: Annotated[float, Gt(0)] = 5.0


class TelemetrySchema(Section):
    enabled: bool = True
    retention_days: Annotated[int, Ge(1)] = 90
    writer: TelemetryWriterMode = TelemetryWriterMode.PROCESS
    otel: OtelSchema | None = None


class CacheStoreSchema(Section):
    store: CacheStore = CacheStore.DATABASE
    redis_url: Annotated[str, NonEmpty()] | None = None


class RedisSchema(Section):
    url: Annotated[str, NonEmpty()] | None = None


class BudgetsSchema(Section):
    on_database_outage: OutagePolicy = OutagePolicy.ADMIT


class RedisOutagePolicy(StrEnum):
    LOCAL = "local"  # each process limits alone meanwhile
    REFUSE = "refuse"  # 503 rate_limit_unavailable


class RateLimitsSchema(Section):
    on_redis_outage: RedisOutagePolicy = RedisOutagePolicy.LOCAL


class LimitsSchema(Section):
    requests: NonNegInt | None = None
    tokens: NonNegInt | None = None
    cost: NonNegDecimal | None = None


class RateLimitSchema(Section):
    requests_per_minute: PosInt | None = None
    tokens_per_minute: PosInt | None = None
    concurrent: PosInt | None = None


class BudgetSchema(Section):
    daily: LimitsSchema | None = None
    monthly: LimitsSchema | None = None


class KeySchema(Section):
    id: Id
    key: str | None = None
    key_hash: str | None = None
    configurations: list[Id] | None = None
    budget: BudgetSchema | None = None
    team: Id | None = None  # a teams[] id
    rate_limit: RateLimitSchema | None = None


class TeamSchema(Section):
    id: Id
    configurations: list[Id] | None = None
    budget: BudgetSchema | None = None
    rate_limit: RateLimitSchema | None = None
    metadata: dict[str, Any] | None = None


class AuthSchema(Section):
    admin_key: str | None = None
    keys: list[KeySchema] = []
    allow_unauthenticated: bool = False
    console_session_hours: Annotated[int, Ge(1), Le(720)] = 12


class ExplorationSchema(Section):
    share: Annotated[float, Gt(0), Le(1)] = 0.02
    min_calls: Annotated[int, Ge(1)] = 5


class RoutingSchema(Section):
    policy_mode: PolicyMode = PolicyMode.PROVIDER_PRIORITY
    call_history: bool = False
    call_history_days: Annotated[int, Ge(1)] = 7
    call_history_min_calls: Annotated[int, Ge(1)] = 5
    call_history_cache_seconds: Annotated[int, Ge(1)] = 300
    call_history_statistic: HistoryStatistic = HistoryStatistic.MEAN
    stream_latency: StreamLatency = StreamLatency.TTFT
    operation_capability_enforcement: Enforcement = Enforcement.ENFORCE
    list_price_ceiling: Annotated[Decimal, Gt(0)] = Decimal("1.00")
    exploration: ExplorationSchema | None = None


class HealthSchema(Section):
    window_seconds: Annotated[int, Ge(1)] = 900
    cache_seconds: NonNegInt = 60
    reorder_fallback: bool = False


class CircuitBreakerSchema(Section):
    failure_threshold: Annotated[int, Ge(1)] = 5
    cooldown_seconds: Annotated[float, Gt(0)] = 30.0


class ProviderSchema(Section):
    id: Id
    adapter: AdapterType
    base_url: str | None = None
    api_key: str | None = None
    api_version: Annotated[str, NonEmpty()] | None = None
    priority: int = 50
    timeout_seconds: Annotated[float, Gt(0)] = 120.0
    max_retries: NonNegInt = 2
    stream_usage: bool = True
    # None: the adapter decides (openai and azure_openai offer the Responses API).
    responses_api: bool | None = None
    region: Annotated[str, NonEmpty()] | None = None  # bedrock
    # vertex: the Google Cloud project and location, and a service-account JSON (else ADC).
    project: Annotated[str, NonEmpty()] | None = None
    location: Annotated[str, NonEmpty()] | None = None
    credentials_file: Annotated[str, NonEmpty()] | None = None


class PriceTierSchema(Section):
    above_input_tokens: PosInt
    input: NonNegDecimal
    output: NonNegDecimal
    cache_read: NonNegDecimal | None = None
    cache_write: NonNegDecimal | None = None


class PriceSchema(Section):
    input: NonNegDecimal
    output: NonNegDecimal
    cache_read: NonNegDecimal | None = None
    cache_write: NonNegDecimal | None = None
    tiers: list[PriceTierSchema] = []


class ModelSchema(Section):
    id: Id
    provider: Id
    name: Annotated[str, NonEmpty()] | None = None
    capabilities: list[Capability] = []
    context_length: PosInt | None = None
    max_output_tokens: PosInt | None = None
    price: PriceSchema | None = None
    active: bool = True
    default: bool = False
    rate_limit: RateLimitSchema | None = None  # the provider account's quota for it


class CriteriaSchema(Section):
    capabilities: list[Capability] = []
    adapter_types: list[AdapterType] | None = None
    min_context_length: NonNegInt = 0
    max_cost_input: NonNegDecimal = Decimal(0)
    prefer_lowest_cost: bool = False


class ResponseCacheSchema(Section):
    ttl_seconds: PosInt
    scope: CacheScope = CacheScope.CONFIGURATION


class ConfigurationSchema(Section):
    id: Id
    mode: ConfigurationMode
    model: Id | None = None
    policy_mode: PolicyMode | None = None
    fallback: list[Id] = []
    criteria: CriteriaSchema | None = None
    budget: BudgetSchema | None = None
    cache: ResponseCacheSchema | None = None
    # None: routing.operationCapabilityEnforcement decides.
    operation_capability_enforcement: Enforcement | None = None
    rate_limit: RateLimitSchema | None = None


class FileSchema(Section):
    server: ServerSchema = msgspec.field(default_factory=ServerSchema)
    database: DatabaseSchema = msgspec.field(default_factory=DatabaseSchema)
    telemetry: TelemetrySchema = msgspec.field(default_factory=TelemetrySchema)
    expose_models: bool = False
    cache: CacheStoreSchema = msgspec.field(default_factory=CacheStoreSchema)
    redis: RedisSchema = msgspec.field(default_factory=RedisSchema)
    budgets: BudgetsSchema = msgspec.field(default_factory=BudgetsSchema)
    rate_limits: RateLimitsSchema = msgspec.field(default_factory=RateLimitsSchema)
    auth: AuthSchema = msgspec.field(default_factory=AuthSchema)
    teams: list[TeamSchema] = []
    routing: RoutingSchema = msgspec.field(default_factory=RoutingSchema)
    health: HealthSchema = msgspec.field(default_factory=HealthSchema)
    circuit_breaker: CircuitBreakerSchema = msgspec.field(default_factory=CircuitBreakerSchema)
    # In phase 1 an entry that failed to parse is left as None (its problems
    # are recorded), so the other entries can still be cross-checked.
    providers: list[ProviderSchema] = []
    models: list[ModelSchema] = []
    configurations: list[ConfigurationSchema] = []
