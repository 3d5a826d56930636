"""The reference example configuration loads into the expected values."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

from gateway.domain.keys import hash_key
from gateway.domain.model import AdapterType, BudgetLimits, Capability, PolicyMode, Price

from .support import load

BOB_HASH = hash_key("bob-key")

# The reference example, with bob's key hash filled in here.
EXAMPLE = (
    (Path(__file__).parent / "gateway_example.yaml")
    .read_text(encoding="utf-8")
    .replace("BOB_HASH", BOB_HASH)
)

ENV = {
    "GATEWAY_ADMIN_KEY": "admin-secret-123",
    "ALICE_KEY": "alice-secret-456",
    "OPENAI_API_KEY": "sk-openai-789",
}


def test_example_configuration_loads_with_its_environment() -> None:
    config = load(EXAMPLE, ENV)

    assert config.server.port == 4000
    assert config.server.request_timeout_seconds == 600.0
    assert config.database.url == "sqlite+aiosqlite:///gateway.db"
    assert config.cache.store == "database"
    assert config.routing.policy_mode is PolicyMode.BALANCED
    assert config.routing.list_price_ceiling == Decimal("1.00")
    assert config.circuit_breaker.cooldown_seconds == 30.0


def test_example_provider_keeps_its_key_for_upstream_only() -> None:
    provider = load(EXAMPLE, ENV).providers["openai-main"]

    assert provider.adapter is AdapterType.OPENAI
    assert provider.base_url == "https://api.openai.com/v1"
    assert provider.api_key == "sk-openai-789"
    assert "sk-openai-789" not in repr(provider)


def test_example_model_prices_are_exact_decimals() -> None:
    model = load(EXAMPLE, ENV).model("gpt-4o-mini")

    assert model.price == Price(input=Decimal("0.15"), output=Decimal("0.60"))
    assert str(model.price.output) == "0.60"  # the scalar's own text, not a float's
    assert model.capabilities == {Capability.CHAT, Capability.TOOLS, Capability.VISION}
    assert (model.context_length, model.max_output_tokens, model.order) == (128000, 16384, 0)


def test_example_configurations_resolve() -> None:
    configurations = load(EXAMPLE, ENV).configurations

    smart = configurations["smart-chat"]
    assert list(configurations) == ["smart-chat", "backup-chat"]
    assert smart.policy_mode is PolicyMode.ECONOMY
    assert smart.fallback == ("backup-chat",)
    assert smart.criteria.adapter_types == frozenset({AdapterType.OPENAI, AdapterType.ANTHROPIC})
    assert smart.criteria.max_cost_input == Decimal("5.0")
    assert smart.criteria.prefer_lowest_cost is True
    assert smart.budget is not None
    assert smart.budget.daily == BudgetLimits(requests=10000, tokens=5000000, cost=Decimal("20.00"))
    assert smart.cache is not None and smart.cache.ttl_seconds == 3600
    assert configurations["backup-chat"].model == "gpt-4o-mini"


def test_example_keys_are_held_only_as_digests() -> None:
    auth = load(EXAMPLE, ENV).auth
    alice, bob = auth.keys

    assert auth.admin_key_hash == hash_key("admin-secret-123")
    assert alice.key_hash == hash_key("alice-secret-456")
    assert bob.key_hash == BOB_HASH
    assert bob.configurations == frozenset({"smart-chat"})
    assert alice.budget is not None and alice.budget.monthly == BudgetLimits(requests=100000)
    assert "alice-secret-456" not in repr(auth)
    assert "admin-secret-123" not in repr(auth)
