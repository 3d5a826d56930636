"""Resolver: fixed targets, open circuits, and the fallback order (health.reorderFallback)."""

from __future__ import annotations

from collections.abc import Mapping

from gateway.config.loader import load_config_text
from gateway.domain.model import Configuration, Endpoint
from gateway.domain.settings import GatewayConfig
from gateway.inbound import parse_inbound
from gateway.pipeline.resolve import Resolution, Resolver
from gateway.routing.circuit import CircuitBreakers
from gateway.routing.snapshot import Snapshot

CONFIG = """
auth: {{allowUnauthenticated: true}}
health: {{reorderFallback: {reorder}}}
providers:
  - {{id: pa, adapter: openai, baseUrl: "http://127.0.0.1:1/v1"}}
  - {{id: pb, adapter: openai, baseUrl: "http://127.0.0.1:2/v1"}}
  - {{id: pc, adapter: openai, baseUrl: "http://127.0.0.1:3/v1"}}
models:
  - {{id: a, provider: pa, capabilities: [chat]}}
  - {{id: b, provider: pb, capabilities: [chat]}}
  - {{id: c, provider: pc, capabilities: [chat]}}
configurations:
  - {{id: main, mode: fixed, model: a, fallback: [to-b, to-c, to-unknown]}}
  - {{id: to-b, mode: fixed, model: b}}
  - {{id: to-c, mode: criteria, criteria: {{capabilities: [chat]}}, policyMode: providerPriority}}
  - {{id: to-unknown, mode: fixed, model: a}}
"""
REQUEST = parse_inbound(
    Endpoint.CHAT, b'{"model": "main", "messages": [{"role": "user", "content": "x"}]}'
)


def _resolver(config: GatewayConfig, health: Mapping[str, float]) -> Resolver:
    breakers = CircuitBreakers(3, 30)

    def snapshot() -> Snapshot:
        return Snapshot(
            models=config.models,
            providers=config.providers,
            routing=config.routing,
            health=health,
            quality={},
            history=None,
            open_circuits=breakers.open_providers(0),
        )

    return Resolver(config, breakers, snapshot, lambda: health)


def _id(step: Configuration | Resolution) -> str:
    return step.configuration.id if isinstance(step, Resolution) else step.id


def test_fallbacks_keep_their_configured_order_by_default() -> None:
    config = load_config_text(CONFIG.format(reorder="false"))
    resolver = _resolver(config, {"pb": 0.1, "pa": 0.9})
    order = [_id(c) for c in resolver.fallbacks(config.configurations["main"], REQUEST)]
    assert order == ["to-b", "to-c", "to-unknown"]


def test_reorder_fallback_puts_the_healthiest_provider_first_unknown_at_half() -> None:
    config = load_config_text(CONFIG.format(reorder="true"))
    # to-b uses pb (0.1); to-c decides and picks a (pa, 0.9, first in config order);
    # to-unknown uses pa too. Unknown health would count 0.5.
    resolver = _resolver(config, {"pb": 0.1, "pa": 0.9})
    order = [_id(c) for c in resolver.fallbacks(config.configurations["main"], REQUEST)]
    assert order == ["to-c", "to-unknown", "to-b"]
    resolver = _resolver(config, {"pb": 0.4})  # pa unknown: 0.5 beats 0.4; ties stay stable
    order = [_id(c) for c in resolver.fallbacks(config.configurations["main"], REQUEST)]
    assert order == ["to-c", "to-unknown", "to-b"]
    resolver = _resolver(config, {"pb": 0.6})
    order = [_id(c) for c in resolver.fallbacks(config.configurations["main"], REQUEST)]
    assert order == ["to-b", "to-c", "to-unknown"]


def test_an_open_circuit_leaves_a_fixed_configuration_nothing_to_attempt() -> None:
    config = load_config_text(CONFIG.format(reorder="false"))
    breakers = CircuitBreakers(1, 30)
    breakers.record_failure("pa", now=1e12)  # opens far in the future: open "now"
    resolver = Resolver(config, breakers, lambda: None, lambda: {})  # type: ignore[arg-type,return-value]
    resolution = resolver.resolve(config.configurations["main"], REQUEST)
    assert resolution.target is None and resolution.failure == "circuit_open"
    ok = resolver.resolve(config.configurations["to-b"], REQUEST)
    assert ok.target is not None and ok.target.model.id == "b"


def test_a_reordered_fallback_is_attempted_as_it_was_decided() -> None:
    config = load_config_text(CONFIG.format(reorder="true"))
    resolver = _resolver(config, {"pb": 0.1, "pa": 0.9})
    steps = resolver.fallbacks(config.configurations["main"], REQUEST)
    assert all(isinstance(s, Resolution) for s in steps)  # decided once, reused when attempted


def test_an_inactive_model_leaves_its_fixed_configuration_nothing_to_attempt() -> None:
    text = CONFIG.format(reorder="false").replace(
        "{id: b, provider: pb, capabilities: [chat]}",
        "{id: b, provider: pb, capabilities: [chat], active: false}",
    )
    config = load_config_text(text)
    resolution = _resolver(config, {}).resolve(config.configurations["to-b"], REQUEST)
    assert resolution.target is None and resolution.failure == "no_eligible_model"
