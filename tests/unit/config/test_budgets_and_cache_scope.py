"""``budgets.onDatabaseOutage`` and a configuration's ``cache.scope``: defaults, values, errors."""

from __future__ import annotations

from .support import MINIMAL, load, problems_of, with_minimal


def test_budgets_admit_during_a_database_outage_by_default() -> None:
    assert load(MINIMAL).budgets.on_database_outage == "admit"


def test_budgets_can_refuse_during_a_database_outage() -> None:
    config = load(with_minimal("budgets: {onDatabaseOutage: refuse}"))
    assert config.budgets.on_database_outage == "refuse"


def test_an_unknown_outage_policy_is_an_error_at_its_path() -> None:
    assert problems_of(with_minimal("budgets: {onDatabaseOutage: maybe}")) == [
        "budgets.onDatabaseOutage: unknown value 'maybe' (expected one of admit, refuse)"
    ]


def test_an_unknown_budgets_key_is_an_error() -> None:
    assert problems_of(with_minimal("budgets: {onOutage: refuse}")) == [
        "budgets.onOutage: unknown key"
    ]


def test_a_cache_is_shared_by_the_configuration_by_default() -> None:
    config = load(with_minimal("configurations: [{id: c, mode: criteria, cache: {ttlSeconds: 5}}]"))
    cache = config.configurations["c"].cache
    assert cache is not None and cache.scope == "configuration"


def test_a_cache_can_be_scoped_to_the_key() -> None:
    text = "configurations: [{id: c, mode: criteria, cache: {ttlSeconds: 5, scope: key}}]"
    cache = load(with_minimal(text)).configurations["c"].cache
    assert cache is not None and (cache.ttl_seconds, cache.scope) == (5, "key")


def test_an_unknown_cache_scope_is_an_error_at_its_path() -> None:
    text = "configurations: [{id: c, mode: criteria, cache: {ttlSeconds: 5, scope: user}}]"
    assert problems_of(with_minimal(text)) == [
        "configurations[0].cache.scope: unknown value 'user' (expected one of configuration, key)"
    ]
