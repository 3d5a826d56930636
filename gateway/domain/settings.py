"""The resolved gateway configuration: what the loader hands to the rest of the code.

Everything here is validated already (references resolved, no unknown keys);
secrets are kept only as SHA-256 hex digests, except provider keys, which must
be sent upstream and are therefore excluded from ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from gateway.domain.limits import RateLimit
from gateway.domain.model import BudgetSpec, Configuration, Model, Provider, RoutingSettings


@dataclass(frozen=True, slots=True)
class ServerSettings:
    host: str = "127.0.0.1"
    port: int = 4000
    workers: int = 1
    max_body_bytes: int = 16 * 1024 * 1024
    request_timeout_seconds: float = 600.0
    max_upstream_body_bytes: int = 64 * 1024 * 1024  # a whole upstream answer
    max_upstream_event_bytes: int = 8 * 1024 * 1024  # one event of an upstream stream
    log_format: str = "text"  # text | json: every log line, access lines included
    access_log: bool = True  # one gateway.access line per call on stderr
    max_header_bytes: int = 64 * 1024  # request line plus headers
    header_timeout_seconds: float = 10.0  # to receive a whole request head
    idle_timeout_seconds: float = 75.0  # a connection the client leaves silent
    max_connections: int = 2048  # open client connections per process
    max_upstream_connections: int = 2048  # the upstream pool, over every provider
    shutdown_drain_seconds: float = 0.0  # SIGTERM: /readyz 503 while still serving
    shutdown_grace_seconds: float = 30.0  # then: running calls' time to finish


@dataclass(frozen=True, slots=True)
class DatabaseSettings:
    url: str = "sqlite+aiosqlite:///gateway.db"


@dataclass(frozen=True, slots=True)
class OtelSettings:
    """telemetry.otel: OpenTelemetry traces (docs/operations.md, "Traces")."""

    enabled: bool = False
    endpoint: str | None = None
    protocol: str | None = None  # http/protobuf | grpc; None: the environment's, else http
    headers: tuple[tuple[str, str], ...] | None = field(default=None, repr=False)  # may be auth
    service_name: str | None = None
    sample_ratio: float = 1.0
    capture_content: bool = False
    propagate_upstream: bool = True
    trace_url: str | None = None
    max_queue_spans: int = 2048
    export_timeout_seconds: float = 5.0


@dataclass(frozen=True, slots=True)
class TelemetrySettings:
    enabled: bool = True
    retention_days: int = 90
    # process: the statements run in a writer process of the serving process's own;
    # inline: on the serving loop (docs/configuration.md#telemetry).
    writer: str = "process"
    otel: OtelSettings = OtelSettings()


@dataclass(frozen=True, slots=True)
class CacheStoreSettings:
    store: str = "database"  # database | redis
    redis_url: str | None = field(default=None, repr=False)  # may carry a password


@dataclass(frozen=True, slots=True)
class RedisSettings:
    """The Redis every process of one deployment shares: circuit states, signal readings
    (and the response cache with ``cache.store: redis``). None: each process keeps its own."""

    url: str | None = field(default=None, repr=False)  # may carry a password


@dataclass(frozen=True, slots=True)
class BudgetSettings:
    on_database_outage: str = "admit"  # admit | refuse


@dataclass(frozen=True, slots=True)
class RateLimitSettings:
    on_redis_outage: str = "local"  # local | refuse


@dataclass(frozen=True, slots=True)
class ApiKey:
    id: str
    key_hash: str = field(repr=False)  # hex SHA-256 of the key, never the key
    configurations: frozenset[str] | None = None  # None: every configuration
    budget: BudgetSpec | None = None
    # Teams (gateway.governance): the key's team, whose budget counts every call of its
    # keys; ``configurations`` above is then already the key's own ones met with the team's.
    team: str | None = None
    team_budget: BudgetSpec | None = None
    rate_limit: RateLimit | None = None  # enforced by gateway.limits
    team_rate_limit: RateLimit | None = None
    source: str = "file"  # file: auth.keys in YAML | database: made at runtime
    expires_at: datetime | None = None  # aware UTC; refused from this second on


@dataclass(frozen=True, slots=True)
class Team:
    """A team: YAML ``teams[]`` (source ``file``) or ``/admin/teams`` (``database``)."""

    id: str
    configurations: frozenset[str] | None = None  # None: every configuration
    budget: BudgetSpec | None = None
    rate_limit: RateLimit | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    source: str = "file"


@dataclass(frozen=True, slots=True)
class AuthSettings:
    admin_key_hash: str | None = field(default=None, repr=False)
    keys: tuple[ApiKey, ...] = ()
    allow_unauthenticated: bool = False
    console_session_hours: int = 12  # how long a console sign-in lasts


@dataclass(frozen=True, slots=True)
class HealthSettings:
    window_seconds: int = 900
    cache_seconds: int = 60
    reorder_fallback: bool = False


@dataclass(frozen=True, slots=True)
class CircuitBreakerSettings:
    failure_threshold: int = 5
    cooldown_seconds: float = 30.0


@dataclass(frozen=True, slots=True)
class GatewayConfig:
    server: ServerSettings = ServerSettings()
    database: DatabaseSettings = DatabaseSettings()
    telemetry: TelemetrySettings = TelemetrySettings()
    expose_models: bool = False
    cache: CacheStoreSettings = CacheStoreSettings()
    redis: RedisSettings = RedisSettings()
    budgets: BudgetSettings = BudgetSettings()
    rate_limits: RateLimitSettings = RateLimitSettings()
    auth: AuthSettings = AuthSettings()
    routing: RoutingSettings = RoutingSettings()
    health: HealthSettings = HealthSettings()
    circuit_breaker: CircuitBreakerSettings = CircuitBreakerSettings()
    providers: dict[str, Provider] = field(default_factory=dict)  # in YAML order
    models: tuple[Model, ...] = ()  # in YAML order (Model.order = index)
    configurations: dict[str, Configuration] = field(default_factory=dict)
    teams: tuple[Team, ...] = ()  # YAML teams[], in order

    _models_by_id: dict[str, Model] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_models_by_id", {m.id: m for m in self.models})

    def model(self, model_id: str) -> Model:
        return self._models_by_id[model_id]

    def provider_of(self, model: Model) -> Provider:
        return self.providers[model.provider]
