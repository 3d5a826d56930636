"""Phase 1: unknown keys, wrong types, bounds and closed sets, each at its YAML path."""

from __future__ import annotations

import pytest

from .support import MINIMAL, load, problems_of, with_minimal


def test_unknown_top_level_key_is_an_error() -> None:
    assert problems_of(with_minimal("serverz: {port: 1}")) == [
        "serverz: unknown key (did you mean 'server'?)"
    ]


def test_unknown_nested_key_is_an_error() -> None:
    problems = problems_of(
        """
        providers: [{id: demo, adapter: echo}]
        models: [{id: m, provider: demo, price: {input: 1, output: 1, cached: 2}}]
        """
    )

    assert problems == ["models[0].price.cached: unknown key (did you mean 'cacheRead'?)"]


def test_snake_case_key_is_unknown() -> None:
    assert problems_of(with_minimal("server: {max_body_bytes: 1}")) == [
        "server.max_body_bytes: unknown key (did you mean 'maxBodyBytes'?)"
    ]


def test_misspelt_key_gets_the_nearest_field() -> None:
    problems = problems_of(
        """
        providers: [{id: demo, adapter: echo}]
        models: [{id: m, provider: demo, contextLenght: 8000}]
        """
    )

    assert problems == ["models[0].contextLenght: unknown key (did you mean 'contextLength'?)"]


def test_key_like_no_field_gets_no_suggestion() -> None:
    assert problems_of(with_minimal("server: {colour: blue}")) == ["server.colour: unknown key"]


@pytest.mark.parametrize(
    ("yaml", "problem"),
    [
        ("server: {port: abc}", "server.port: expected int, got str"),
        ("server: {port: 1.5}", "server.port: expected int, got float"),
        ("server: {port: true}", "server.port: expected int, got bool"),
        ("telemetry: {enabled: 1}", "telemetry.enabled: expected bool, got int"),
        ("database: {url: 5}", "database.url: expected str, got int"),
        ("server: [1]", "server: expected a mapping, got list"),
        ("exposeModels: yes please", "exposeModels: expected bool, got str"),
    ],
)
def test_wrong_type_names_expected_and_actual(yaml: str, problem: str) -> None:
    assert problems_of(with_minimal(yaml)) == [problem]


def test_price_below_zero_is_an_error_at_its_path() -> None:
    problems = problems_of(
        """
        providers: [{id: demo, adapter: echo}]
        models:
          - {id: a, provider: demo}
          - {id: b, provider: demo}
          - {id: c, provider: demo, price: {input: -0.01, output: 1}}
        """
    )

    assert problems == ["models[2].price.input: must be >= 0"]


def test_price_needs_input_and_output() -> None:
    problems = problems_of(
        """
        providers: [{id: demo, adapter: echo}]
        models: [{id: a, provider: demo, price: {input: 1}}]
        """
    )

    assert problems == ["models[0].price.output: required"]


def test_unknown_capability_is_an_error_at_its_index() -> None:
    problems = problems_of(
        """
        providers: [{id: demo, adapter: echo}]
        models: [{id: a, provider: demo, capabilities: [chat, telepathy, tools, mind_reading]}]
        """
    )

    expected = (
        "(expected one of chat, completion, embeddings, vision, tools, streaming, json_mode, "
        "reasoning)"
    )
    assert problems == [
        f"models[0].capabilities[1]: unknown capability 'telepathy' {expected}",
        f"models[0].capabilities[3]: unknown capability 'mind_reading' {expected}",
    ]


def test_unknown_adapter_lists_the_known_ones() -> None:
    (problem,) = problems_of("providers: [{id: p, adapter: foo}]")

    assert problem.startswith(
        "providers[0].adapter: unknown adapter 'foo' (expected one of openai,"
    )
    assert problem.endswith("custom, echo, bedrock)")


def test_unknown_policy_mode_is_an_error_globally_and_per_configuration() -> None:
    problems = problems_of(
        with_minimal(
            """
            routing: {policyMode: cheapest}
            configurations: [{id: c, mode: criteria, policyMode: fastest}]
            """
        )
    )

    modes = "(expected one of providerPriority, balanced, quality, economy)"
    assert problems == [
        f"routing.policyMode: unknown policy mode 'cheapest' {modes}",
        f"configurations[0].policyMode: unknown policy mode 'fastest' {modes}",
    ]


def test_unknown_configuration_mode_is_an_error() -> None:
    assert problems_of(with_minimal("configurations: [{id: c, mode: auto}]")) == [
        "configurations[0].mode: unknown value 'auto' (expected one of fixed, criteria)"
    ]


def test_unknown_enforcement_is_an_error() -> None:
    assert problems_of(with_minimal("routing: {operationCapabilityEnforcement: warn}")) == [
        "routing.operationCapabilityEnforcement: unknown value 'warn'"
        " (expected one of enforce, observe)"
    ]


@pytest.mark.parametrize("ceiling", ["0", "-1", "0.00"])
def test_non_positive_list_price_ceiling_is_an_error(ceiling: str) -> None:
    assert problems_of(with_minimal(f"routing: {{listPriceCeiling: {ceiling}}}")) == [
        "routing.listPriceCeiling: must be > 0"
    ]


@pytest.mark.parametrize(
    ("yaml", "problem"),
    [
        ("routing: {callHistoryDays: 0}", "routing.callHistoryDays: must be >= 1"),
        ("routing: {callHistoryMinCalls: 0}", "routing.callHistoryMinCalls: must be >= 1"),
        ("routing: {callHistoryCacheSeconds: 0}", "routing.callHistoryCacheSeconds: must be >= 1"),
        ("server: {port: 70000}", "server.port: must be <= 65535"),
        ("server: {workers: 0}", "server.workers: must be >= 1"),
        ("server: {requestTimeoutSeconds: 0}", "server.requestTimeoutSeconds: must be > 0"),
        (
            "server: {maxUpstreamBodyBytes: 1024}",
            "server.maxUpstreamBodyBytes: must be >= 65536",
        ),
        (
            "server: {maxUpstreamEventBytes: 0}",
            "server.maxUpstreamEventBytes: must be >= 65536",
        ),
        ("database: {url: ''}", "database.url: must not be empty"),
        ("circuitBreaker: {failureThreshold: 0}", "circuitBreaker.failureThreshold: must be >= 1"),
    ],
)
def test_out_of_range_setting_is_an_error(yaml: str, problem: str) -> None:
    assert problems_of(with_minimal(yaml)) == [problem]


@pytest.mark.parametrize(
    ("provider", "problem"),
    [
        ("{id: p, adapter: echo, timeoutSeconds: 0}", "providers[0].timeoutSeconds: must be > 0"),
        ("{id: p, adapter: echo, maxRetries: -1}", "providers[0].maxRetries: must be >= 0"),
        ("{id: p, adapter: echo, priority: high}", "providers[0].priority: expected int, got str"),
        ("{adapter: echo}", "providers[0].id: required"),
        ("{id: '', adapter: echo}", "providers[0].id: must not be empty"),
    ],
)
def test_invalid_provider_field_is_an_error(provider: str, problem: str) -> None:
    assert problems_of(f"providers: [{provider}]") == [problem]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ("contextLength: 0", "models[0].contextLength: must be > 0"),
        ("maxOutputTokens: -5", "models[0].maxOutputTokens: must be > 0"),
        ("active: maybe", "models[0].active: expected bool, got str"),
        ("capabilities: chat", "models[0].capabilities: expected a list, got str"),
    ],
)
def test_invalid_model_field_is_an_error(fields: str, problem: str) -> None:
    yaml = (
        f"providers: [{{id: demo, adapter: echo}}]\nmodels: [{{id: m, provider: demo, {fields}}}]"
    )
    assert problems_of(yaml) == [problem]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            "criteria: {minContextLength: -1}",
            "configurations[0].criteria.minContextLength: must be >= 0",
        ),
        ("criteria: {maxCostInput: -0.5}", "configurations[0].criteria.maxCostInput: must be >= 0"),
        (
            "criteria: {adapterTypes: [openai, bard]}",
            "configurations[0].criteria.adapterTypes[1]: unknown adapter 'bard'",
        ),
        ("budget: {daily: {cost: -1}}", "configurations[0].budget.daily.cost: must be >= 0"),
        (
            "budget: {monthly: {requests: -1}}",
            "configurations[0].budget.monthly.requests: must be >= 0",
        ),
        ("budget: {weekly: {requests: 1}}", "configurations[0].budget.weekly: unknown key"),
        ("cache: {ttlSeconds: 0}", "configurations[0].cache.ttlSeconds: must be > 0"),
        ("cache: {}", "configurations[0].cache.ttlSeconds: required"),
    ],
)
def test_invalid_configuration_field_is_an_error(fields: str, problem: str) -> None:
    (found,) = problems_of(with_minimal(f"configurations: [{{id: c, mode: criteria, {fields}}}]"))
    assert found.startswith(problem)


def test_budget_zero_is_accepted_as_unlimited() -> None:
    from .support import load

    config = load(
        with_minimal("configurations: [{id: c, mode: criteria, budget: {daily: {cost: 0}}}]")
    )

    budget = config.configurations["c"].budget
    assert budget is not None and budget.daily is not None and budget.daily.unlimited


def test_independent_errors_are_all_reported_together() -> None:
    problems = problems_of(
        """
        server: {port: abc}
        providers: [{id: p, adapter: foo}]
        models: [{id: m, provider: nowhere, price: {input: -1, output: 1}}]
        extra: 1
        """
    )

    assert len(problems) == 5
    assert "server.port: expected int, got str" in problems
    assert "extra: unknown key" in problems
    assert any(p.startswith("providers[0].adapter: unknown adapter 'foo'") for p in problems)
    assert "models[0].price.input: must be >= 0" in problems
    assert "models[0].provider: unknown provider 'nowhere'" in problems


def test_three_independent_errors_yield_three_problems() -> None:
    problems = problems_of(
        MINIMAL
        + """
routing: {listPriceCeiling: 0}
configurations:
  - {id: c, mode: fixed, model: ghost}
health: {windowSeconds: 0}
"""
    )

    assert sorted(problems) == [
        "configurations[0].model: unknown model 'ghost' (valid: m1)",
        "health.windowSeconds: must be >= 1",
        "routing.listPriceCeiling: must be > 0",
    ]


def test_a_failed_entry_causes_no_dangling_reference_elsewhere() -> None:
    problems = problems_of(
        """
        providers: [{id: p, adapter: foo}]
        models: [{id: m, provider: p}]
        configurations: [{id: c, mode: fixed, model: m}]
        """
    )

    assert len(problems) == 1
    assert problems[0].startswith("providers[0].adapter: unknown adapter")


@pytest.mark.parametrize("bad_id", ["chat–eu", "a b", "x" * 129, "tab\there"])
def test_an_id_must_be_printable_ascii_without_spaces(bad_id: str) -> None:
    problems = problems_of(
        f"""
        providers: [{{id: demo, adapter: echo}}]
        models: [{{id: m, provider: demo}}]
        configurations: [{{id: "{bad_id}", mode: fixed, model: m}}]
        """
    )
    assert len(problems) == 1
    assert problems[0].startswith("configurations[0].id: must be at most 128 printable ASCII")


def test_ids_may_carry_the_punctuation_model_names_use() -> None:
    config = load(
        """
        providers: [{id: demo, adapter: echo}]
        models: [{id: "meta-llama/Llama-3.1-70b@v2:fast", provider: demo}]
        configurations: [{id: c, mode: fixed, model: "meta-llama/Llama-3.1-70b@v2:fast"}]
        """
    )
    assert config.configurations["c"].model == "meta-llama/Llama-3.1-70b@v2:fast"


def test_responses_api_is_refused_for_adapters_that_build_their_own_requests() -> None:
    text = """
providers:
  - {id: claude, adapter: anthropic, baseUrl: "http://127.0.0.1:1/v1", responsesApi: true}
  - {id: demo, adapter: echo, responsesApi: true}
  - {id: fine, adapter: anthropic, baseUrl: "http://127.0.0.1:1/v1", responsesApi: false}
models:
  - {id: m1, provider: demo}
"""
    assert problems_of(text) == [
        "providers[0].responsesApi: adapter 'anthropic' offers no Responses API",
        "providers[1].responsesApi: adapter 'echo' offers no Responses API",
    ]
