"""Absent keys take the defaults docs/configuration.md lists."""

from __future__ import annotations

from decimal import Decimal

from gateway.domain.model import AdapterType, PolicyMode

from .support import MINIMAL, load


def test_absent_sections_take_the_documented_defaults() -> None:
    config = load(MINIMAL)

    assert (config.server.host, config.server.port, config.server.workers) == ("127.0.0.1", 4000, 1)
    assert config.server.max_body_bytes == 16777216
    assert config.server.max_upstream_body_bytes == 64 * 1024 * 1024
    assert config.server.max_upstream_event_bytes == 8 * 1024 * 1024
    assert config.server.request_timeout_seconds == 600
    assert config.database.url == "sqlite+aiosqlite:///gateway.db"
    assert (config.telemetry.enabled, config.telemetry.retention_days) == (True, 90)
    assert config.expose_models is False
    assert (config.cache.store, config.cache.redis_url) == ("database", None)
    assert config.auth.keys == () and config.auth.admin_key_hash is None
    assert config.auth.allow_unauthenticated is False
    health = config.health
    assert (health.window_seconds, health.cache_seconds, health.reorder_fallback) == (
        900,
        60,
        False,
    )
    assert config.circuit_breaker.failure_threshold == 5
    assert config.circuit_breaker.cooldown_seconds == 30


def test_routing_defaults_to_provider_priority_without_call_history() -> None:
    routing = load(MINIMAL).routing

    assert routing.policy_mode is PolicyMode.PROVIDER_PRIORITY
    assert routing.call_history is False
    assert routing.call_history_days == 7
    assert routing.call_history_min_calls == 5
    assert routing.call_history_cache_seconds == 300
    assert routing.operation_capability_enforcement == "enforce"
    assert routing.list_price_ceiling == Decimal("1.00")


def test_provider_defaults() -> None:
    provider = load(MINIMAL).providers["demo"]

    assert provider.adapter is AdapterType.ECHO
    assert (provider.priority, provider.timeout_seconds, provider.max_retries) == (50, 120, 2)
    assert provider.stream_usage is True
    assert provider.api_key is None
    assert provider.base_url == ""


def test_model_defaults_name_to_its_id_and_stays_unpriced() -> None:
    model = load(MINIMAL).model("m1")

    assert model.name == "m1"
    assert model.price is None  # unpriced, not free
    assert (model.active, model.default) == (True, False)
    assert model.capabilities == frozenset()
    assert (model.context_length, model.max_output_tokens) == (None, None)


def test_model_order_is_its_index_in_the_yaml() -> None:
    config = load(
        """
        providers: [{id: demo, adapter: echo}]
        models:
          - {id: zeta, provider: demo}
          - {id: alpha, provider: demo}
        """
    )

    assert [(m.id, m.order) for m in config.models] == [("zeta", 0), ("alpha", 1)]


def test_anthropic_version_defaults() -> None:
    config = load(
        """
        providers:
          - {id: a, adapter: anthropic, baseUrl: "https://api.anthropic.com/v1"}
        """
    )

    assert config.providers["a"].api_version == "2023-06-01"


def test_criteria_configuration_without_criteria_block_takes_empty_criteria() -> None:
    config = load(MINIMAL + "configurations: [{id: any, mode: criteria}]\n")

    criteria = config.configurations["any"].criteria
    assert criteria.capabilities == frozenset()
    assert criteria.adapter_types is None
    assert (criteria.min_context_length, criteria.max_cost_input) == (0, Decimal(0))


def test_upstream_read_caps_are_set_in_the_server_section() -> None:
    config = load(MINIMAL + "server: {maxUpstreamBodyBytes: 1048576, maxUpstreamEventBytes: 65536}")
    assert config.server.max_upstream_body_bytes == 1048576
    assert config.server.max_upstream_event_bytes == 65536


def test_only_openai_and_azure_offer_the_responses_api_unless_told() -> None:
    config = load(
        """
        providers:
          - {id: oa, adapter: openai, baseUrl: "http://127.0.0.1:1/v1"}
          - {id: az, adapter: azure_openai, baseUrl: "http://127.0.0.1:1", apiVersion: v}
          - {id: local, adapter: ollama, baseUrl: "http://127.0.0.1:1/v1"}
          - {id: vllm, adapter: custom, baseUrl: "http://127.0.0.1:1/v1", responsesApi: true}
          - {id: old, adapter: openai, baseUrl: "http://127.0.0.1:1/v1", responsesApi: false}
          - {id: claude, adapter: anthropic, baseUrl: "http://127.0.0.1:1/v1"}
        models:
          - {id: m1, provider: oa}
        """
    )
    native = {pid for pid, provider in config.providers.items() if provider.responses_api}
    assert native == {"oa", "az", "vllm"}
