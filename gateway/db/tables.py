"""The core tables. Names are a contract (docs/telemetry.md#telemetry): add, never rename.

Migration ``0001_initial`` creates the same schema; a test compares the two.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Date,
    Double,
    Index,
    Integer,
    SmallInteger,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from gateway.db.base import metadata
from gateway.db.types import BigId, Money, UtcDateTime

# Lengths fit MariaDB's 3072-byte index key limit in utf8mb4 for every index below.
ID_LEN = 128  # provider, configuration and gateway-key ids
MODEL_LEN = 191  # model ids
OPERATION_LEN = 16

ZERO = text("0")
EMPTY = text("''")


def _flag(name: str) -> Column[int]:
    return Column(name, SmallInteger, nullable=False, default=0, server_default=ZERO)


def _count(name: str) -> Column[int]:
    return Column(name, Integer, nullable=False, default=0, server_default=ZERO)


telemetry = Table(
    "telemetry",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("created_at", UtcDateTime, nullable=False),
    Column("correlation_id", String(128), nullable=False),
    Column("api_key_id", String(ID_LEN)),
    Column("operation", String(OPERATION_LEN), nullable=False),
    Column("configuration", String(ID_LEN), nullable=False),
    Column("provider", String(ID_LEN)),
    Column("adapter_type", String(32)),
    Column("model", String(MODEL_LEN)),
    Column("served_configuration", String(ID_LEN)),
    Column("served_provider", String(ID_LEN)),
    Column("served_model", String(MODEL_LEN)),
    Column("response_model", String(255)),
    Column("success", SmallInteger, nullable=False),
    Column("error_class", String(64)),
    Column("http_status", Integer, nullable=False),
    Column("latency_ms", Double, nullable=False),
    Column("time_to_first_token_ms", Double),
    _flag("cache_hit"),
    _count("fallback_attempts"),
    _count("provider_retries"),
    Column("actual_input_tokens", Integer),
    Column("actual_output_tokens", Integer),
    Column("actual_cost", Money),
    Column("usage_source", String(16), nullable=False, default="none", server_default="none"),
    Column("routing_policy_mode", String(32), nullable=False, default="", server_default=EMPTY),
    _count("routing_candidates"),
    Column("routing_rejections", String(512), nullable=False, default="", server_default=EMPTY),
    Column("routing_cost_basis", String(16), nullable=False, default="", server_default=EMPTY),
    _flag("routing_signal_quality"),
    _flag("routing_signal_health"),
    _flag("routing_signal_cost"),
    _flag("routing_signal_latency"),
    _flag("routing_signal_call_cost"),
    # Beyond the contract: the estimate behind usage_daily.estimated_cost.
    Column("estimated_input_tokens", Integer),
    Column("estimated_output_tokens", Integer),
    Column("estimated_cost", Money),
    # Migration 0005: the decision detail the console shows (gateway.routing.detail), JSON.
    Column("routing_detail", Text),
    # Migration 0004 (chained after 0006): streams' output tokens per second, and the model
    # the upstream says it ran when it is not the one sent (docs/telemetry.md#telemetry).
    Column("output_tokens_per_second", Double),
    Column("upstream_model", String(255)),
    # Migration 0006 (after 0005, before 0004): exploration chose the model, not the ranking.
    _flag("routing_explored"),
    # Migration 0013: the call's OpenTelemetry trace (telemetry.otel), 32 hex digits.
    Column("trace_id", String(32), index=True),
    # Migration 0012: the calling key's team (gateway.governance), NULL for none.
    Column("team_id", String(ID_LEN)),
    # Migration 0014: the API the call came in by, the request fields accepted but not
    # passed on (comma-separated), and where the served model's price came from.
    Column("inbound_api", String(16)),
    Column("ignored_params", Text),
    Column("price_source", String(64)),
)

# Covering index for the call-history GROUP BY (gateway.signals.history): the
# window range first, then every column the query reads, so the read never
# touches the table.
Index(
    "ix_telemetry_call_history",
    telemetry.c.created_at,
    telemetry.c.served_provider,
    telemetry.c.served_model,
    telemetry.c.operation,
    telemetry.c.success,
    telemetry.c.fallback_attempts,
    telemetry.c.cache_hit,
    telemetry.c.latency_ms,
    telemetry.c.actual_cost,
    telemetry.c.time_to_first_token_ms,  # since 0004: streams are ranked by it
)
Index("ix_telemetry_health_window", telemetry.c.created_at, telemetry.c.provider)
# Migration 0005: the console's Calls page filtered by configuration, newest first.
Index("ix_telemetry_configuration_id", telemetry.c.configuration, telemetry.c.id)

usage_daily = Table(
    "usage_daily",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("day", Date, nullable=False),
    # '' rather than NULL for an absent part: NULLs never collide in a unique key.
    Column("api_key_id", String(ID_LEN), nullable=False, server_default=EMPTY),
    Column("configuration", String(ID_LEN), nullable=False, server_default=EMPTY),
    Column("provider", String(ID_LEN), nullable=False, server_default=EMPTY),
    Column("model", String(MODEL_LEN), nullable=False, server_default=EMPTY),
    Column("operation", String(OPERATION_LEN), nullable=False, server_default=EMPTY),
    Column("requests", BigInteger, nullable=False, default=0, server_default=ZERO),
    Column("input_tokens", BigInteger, nullable=False, default=0, server_default=ZERO),
    Column("output_tokens", BigInteger, nullable=False, default=0, server_default=ZERO),
    Column("cost", Money, nullable=False, default=0, server_default=ZERO),
    Column("estimated_cost", Money, nullable=False, default=0, server_default=ZERO),
    # Migration 0012: the key's team ('' for none), part of the row's key.
    Column("team_id", String(ID_LEN), nullable=False, server_default=EMPTY),
    UniqueConstraint(
        "day",
        "api_key_id",
        "configuration",
        "provider",
        "model",
        "operation",
        "team_id",
        name="uq_usage_daily_key",
    ),
)

USAGE_KEY_COLUMNS: tuple[str, ...] = (
    "day",
    "api_key_id",
    "configuration",
    "provider",
    "model",
    "operation",
    "team_id",
)

eval_results = Table(
    "eval_results",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("set_id", String(ID_LEN), nullable=False),
    Column("provider", String(ID_LEN), nullable=False),
    Column("model", String(MODEL_LEN), nullable=False),
    Column("grader", String(64), nullable=False, server_default="deterministic"),
    Column("prompt_count", Integer, nullable=False),
    Column("passed_count", Integer, nullable=False),
    Column("mean_score", Double, nullable=False),
    Column("run_at", UtcDateTime, nullable=False),
)
Index("ix_eval_results_model", eval_results.c.provider, eval_results.c.model)
# One row per run: importing the same results again adds nothing.
Index(
    "uq_eval_results_run",
    eval_results.c.set_id,
    eval_results.c.provider,
    eval_results.c.model,
    eval_results.c.grader,
    eval_results.c.run_at,
    unique=True,
)

# Telemetry batches already written (migration 0015): a batch's key is inserted in the
# transaction that writes its rows and aggregates, so a batch sent again (the writer
# process restarted before it acknowledged it, a commit whose answer was lost) is
# recognised and written nothing. Keys older than a day are purged by retention.
BATCH_KEY_LEN = 80

telemetry_batches = Table(
    "telemetry_batches",
    metadata,
    Column("batch_key", String(BATCH_KEY_LEN), primary_key=True),
    Column("written_at", UtcDateTime, nullable=False),
)
Index("ix_telemetry_batches_written_at", telemetry_batches.c.written_at)
