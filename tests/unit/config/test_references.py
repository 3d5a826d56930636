"""Phase 2: references resolve, ids are unique, fallbacks have no cycles."""

from __future__ import annotations

import pytest

from gateway.domain.model import Configuration, ConfigurationMode

from .support import MINIMAL, load, problems_of, with_minimal

MODEL_IDS = (
    "llama-3-70b",
    "gpt-4o",
    "claude-3-haiku",
    "gpt-4o-mini",
    "mistral-large",
    "gpt-4.1-mini",
    "text-embedding-3-small",
    "o3-mini",
)


def test_duplicate_provider_id_is_an_error() -> None:
    problems = problems_of("providers: [{id: p, adapter: echo}, {id: p, adapter: echo}]")

    assert problems == ["providers[1].id: duplicate provider id 'p' (first at providers[0])"]


def test_provider_other_than_echo_requires_base_url() -> None:
    assert problems_of("providers: [{id: p, adapter: openai}]") == [
        "providers[0].baseUrl: required for adapter 'openai'"
    ]


@pytest.mark.parametrize("url", ["api.openai.com/v1", "ftp://host/x", "https://"])
def test_base_url_must_be_http_or_https(url: str) -> None:
    assert problems_of(f"providers: [{{id: p, adapter: ollama, baseUrl: '{url}'}}]") == [
        "providers[0].baseUrl: must be an http:// or https:// URL"
    ]


def test_ollama_and_custom_need_no_api_key() -> None:
    config = load(
        """
        providers:
          - {id: local, adapter: ollama, baseUrl: "http://127.0.0.1:11434/v1"}
          - {id: mine, adapter: custom, baseUrl: "http://127.0.0.1:9000/v1"}
        """
    )

    assert config.providers["local"].api_key is None
    assert config.providers["mine"].base_url == "http://127.0.0.1:9000/v1"


def test_azure_openai_requires_api_version() -> None:
    assert problems_of(
        "providers: [{id: az, adapter: azure_openai, baseUrl: 'https://r.openai.azure.com'}]"
    ) == ["providers[0].apiVersion: required for adapter 'azure_openai'"]


def test_azure_openai_keeps_its_api_version() -> None:
    config = load(
        """
        providers:
          - {id: az, adapter: azure_openai, baseUrl: "https://r.openai.azure.com",
             apiVersion: "2024-10-21", apiKey: k}
        """
    )

    assert config.providers["az"].api_version == "2024-10-21"


def test_duplicate_model_id_is_an_error() -> None:
    problems = problems_of(MINIMAL + "  - {id: m1, provider: demo}\n")

    assert problems == ["models[1].id: duplicate model id 'm1' (first at models[0])"]


def test_model_naming_a_missing_provider_is_an_error() -> None:
    assert problems_of("models: [{id: m, provider: ghost}]") == [
        "models[0].provider: unknown provider 'ghost' (no provider is defined)"
    ]


def test_duplicate_configuration_id_is_an_error() -> None:
    problems = problems_of(
        with_minimal("configurations: [{id: c, mode: criteria}, {id: c, mode: criteria}]")
    )

    assert problems == [
        "configurations[1].id: duplicate configuration id 'c' (first at configurations[0])"
    ]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("{id: c, mode: fixed}", "configurations[0].model: required when mode is 'fixed'"),
        (
            "{id: c, mode: fixed, model: ghost}",
            "configurations[0].model: unknown model 'ghost' (valid: m1)",
        ),
        (
            "{id: c, mode: fixed, model: m1, criteria: {capabilities: [chat]}}",
            "configurations[0].criteria: not allowed when mode is 'fixed'",
        ),
        (
            "{id: c, mode: criteria, model: m1}",
            "configurations[0].model: not allowed when mode is 'criteria'",
        ),
    ],
)
def test_mode_decides_between_model_and_criteria(entry: str, problem: str) -> None:
    assert problems_of(with_minimal(f"configurations: [{entry}]")) == [problem]


def test_fallback_naming_a_missing_configuration_is_an_error() -> None:
    problems = problems_of(
        with_minimal(
            """
            configurations:
              - {id: a, mode: criteria}
              - {id: b, mode: criteria, fallback: [a, x]}
            """
        )
    )

    assert problems == ["configurations[1].fallback[1]: unknown configuration 'x' (valid: a, b)"]


def test_an_unknown_reference_lists_the_closest_valid_ids() -> None:
    models = "".join(f"  - {{id: {name}, provider: demo}}\n" for name in MODEL_IDS)
    problems = problems_of(
        MINIMAL.replace("  - {id: m1, provider: demo}\n", models)
        + "configurations: [{id: c, mode: fixed, model: gpt-4o-mnii}]\n"
    )

    (problem,) = problems
    assert problem.startswith("configurations[0].model: unknown model 'gpt-4o-mnii' (valid: ")
    shown = problem.split("(valid: ")[1].rstrip(")").split(", ")
    assert shown[0] == "gpt-4o-mini"  # the closest first
    assert len(shown) == 6 and shown[-1] == "…"  # five of the eight, then an ellipsis
    assert "gpt-4o" in shown and "llama-3-70b" not in shown


def test_an_environment_value_is_not_compared_with_the_valid_ids() -> None:
    problems = problems_of(
        with_minimal('configurations: [{id: c, mode: fixed, model: "${MODEL}"}]'), {"MODEL": "m2"}
    )

    assert problems == ["configurations[0].model: unknown model (from ${MODEL}) (valid: m1)"]


def test_fallback_to_itself_is_an_error() -> None:
    assert problems_of(
        with_minimal("configurations: [{id: a, mode: criteria, fallback: [a]}]")
    ) == ["configurations[0].fallback[0]: a configuration cannot fall back to itself"]


def test_two_configurations_falling_back_to_each_other_is_a_cycle() -> None:
    problems = problems_of(
        with_minimal(
            """
            configurations:
              - {id: a, mode: criteria, fallback: [b]}
              - {id: b, mode: criteria, fallback: [a]}
            """
        )
    )

    assert problems == ["configurations[1].fallback[0]: fallback cycle: a -> b -> a"]


def test_longer_fallback_cycle_is_reported_once() -> None:
    problems = problems_of(
        with_minimal(
            """
            configurations:
              - {id: a, mode: criteria, fallback: [b]}
              - {id: b, mode: criteria, fallback: [c]}
              - {id: c, mode: criteria, fallback: [d, a]}
              - {id: d, mode: criteria}
            """
        )
    )

    assert problems == ["configurations[2].fallback[1]: fallback cycle: a -> b -> c -> a"]


def test_fallback_chain_without_cycle_loads() -> None:
    config = load(
        with_minimal(
            """
            configurations:
              - {id: a, mode: criteria, fallback: [b, c]}
              - {id: b, mode: criteria, fallback: [c]}
              - {id: c, mode: fixed, model: m1}
            """
        )
    )

    assert config.configurations["a"].fallback == ("b", "c")


def test_expose_models_adds_a_fixed_configuration_per_model() -> None:
    config = load(
        """
        exposeModels: true
        providers: [{id: demo, adapter: echo}]
        models: [{id: m1, provider: demo}, {id: m2, provider: demo, active: false}]
        configurations: [{id: chat, mode: criteria}]
        """
    )

    assert list(config.configurations) == ["chat", "m1", "m2"]
    assert config.configurations["m1"] == Configuration(
        id="m1", mode=ConfigurationMode.FIXED, model="m1"
    )
    assert config.expose_models is True


def test_explicit_configuration_wins_over_an_exposed_model_of_the_same_id() -> None:
    config = load(
        MINIMAL
        + """
exposeModels: true
configurations: [{id: m1, mode: criteria, criteria: {capabilities: [chat]}}]
"""
    )

    assert config.configurations["m1"].mode == "criteria"


def test_models_are_not_configurations_without_expose_models() -> None:
    assert problems_of(
        with_minimal("configurations: [{id: a, mode: criteria, fallback: [m1]}]")
    ) == ["configurations[0].fallback[0]: unknown configuration 'm1' (valid: a)"]


def test_fallback_may_name_an_exposed_model() -> None:
    config = load(
        MINIMAL
        + """
exposeModels: true
configurations: [{id: a, mode: criteria, fallback: [m1]}]
"""
    )

    assert config.configurations["a"].fallback == ("m1",)


def test_redis_cache_requires_its_url() -> None:
    assert problems_of(with_minimal("cache: {store: redis}")) == [
        "cache.redisUrl: required when store is 'redis' and redis.url is not set"
    ]


def test_redis_cache_keeps_its_url() -> None:
    config = load(with_minimal("cache: {store: redis, redisUrl: 'redis://127.0.0.1:6379/0'}"))

    assert (config.cache.store, config.cache.redis_url) == ("redis", "redis://127.0.0.1:6379/0")


def test_redis_cache_takes_the_deployments_redis_url_unless_it_names_its_own() -> None:
    shared = "redis: {url: 'redis://127.0.0.1:6379/3'}\n"
    config = load(with_minimal(shared + "cache: {store: redis}"))
    assert config.cache.redis_url == "redis://127.0.0.1:6379/3"
    assert config.redis.url == "redis://127.0.0.1:6379/3"
    own = load(with_minimal(shared + "cache: {store: redis, redisUrl: 'redis://cache:6379/0'}"))
    assert own.cache.redis_url == "redis://cache:6379/0"


def test_no_redis_by_default_and_the_url_stays_out_of_repr() -> None:
    assert load(MINIMAL).redis.url is None
    config = load(with_minimal("redis: {url: 'redis://:hunter2secret@127.0.0.1:6379/3'}"))
    assert config.redis.url == "redis://:hunter2secret@127.0.0.1:6379/3"
    assert "hunter2secret" not in repr(config)


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "127.0.0.1:6379"])
def test_redis_url_must_be_a_redis_url(url: str) -> None:
    assert problems_of(with_minimal(f"redis: {{url: '{url}'}}")) == [
        "redis.url: must be a redis://, rediss:// or unix:// URL"
    ]


def test_unknown_cache_store_is_an_error() -> None:
    assert problems_of(with_minimal("cache: {store: memcached}")) == [
        "cache.store: unknown value 'memcached' (expected one of database, redis)"
    ]


def test_separate_fallback_cycles_are_each_reported() -> None:
    problems = problems_of(
        with_minimal(
            """
            configurations:
              - {id: a, mode: criteria, fallback: [b]}
              - {id: b, mode: criteria, fallback: [a]}
              - {id: c, mode: criteria, fallback: [d]}
              - {id: d, mode: criteria, fallback: [c]}
            """
        )
    )

    assert problems == [
        "configurations[1].fallback[0]: fallback cycle: a -> b -> a",
        "configurations[3].fallback[0]: fallback cycle: c -> d -> c",
    ]


def test_dense_acyclic_fallbacks_load() -> None:
    # Each falls back to every later one: 2^40 paths, which a search that
    # re-walks explored configurations would never finish.
    count = 40
    later = [", ".join(f"c{j}" for j in range(i + 1, count)) for i in range(count)]
    lines = [f"  - {{id: c{i}, mode: criteria, fallback: [{later[i]}]}}" for i in range(count)]
    config = load(MINIMAL + "configurations:\n" + "\n".join(lines) + "\n")

    assert len(config.configurations) == count
