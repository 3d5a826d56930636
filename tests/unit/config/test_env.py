"""${NAME} interpolation: missing names are errors, values never leak into messages."""

from __future__ import annotations

from .support import MINIMAL, load, problems_of, with_minimal

OPENAI = """
providers:
  - {id: p, adapter: openai, baseUrl: "https://api.example.com/v1", apiKey: ${OPENAI_API_KEY}}
"""


def test_variable_fills_a_string() -> None:
    config = load(OPENAI, {"OPENAI_API_KEY": "sk-abc"})

    assert config.providers["p"].api_key == "sk-abc"


def test_missing_variable_is_an_error_naming_it_and_its_path() -> None:
    assert problems_of(OPENAI) == [
        "providers[0].apiKey: environment variable OPENAI_API_KEY is not set"
    ]


def test_variable_set_to_empty_string_is_not_missing() -> None:
    config = load(OPENAI, {"OPENAI_API_KEY": ""})

    assert config.providers["p"].api_key is None  # an empty key is no key


def test_embedded_variables_are_substituted_in_place() -> None:
    config = load(
        with_minimal('database: {url: "postgresql+asyncpg://${DB_USER}@${DB_HOST}:5432/gw"}'),
        {"DB_USER": "gw", "DB_HOST": "db.local"},
    )

    assert config.database.url == "postgresql+asyncpg://gw@db.local:5432/gw"


def test_every_missing_variable_of_one_scalar_is_named() -> None:
    problems = problems_of(with_minimal('database: {url: "x://${DB_USER}@${DB_HOST}/gw"}'))

    assert problems == ["database.url: environment variables DB_USER, DB_HOST are not set"]


def test_double_dollar_escapes_a_literal_reference() -> None:
    config = load(with_minimal('database: {url: "sqlite:///$${NOT_A_VAR}.db"}'))

    assert config.database.url == "sqlite:///${NOT_A_VAR}.db"


def test_unterminated_reference_is_an_error() -> None:
    problems = problems_of(with_minimal('database: {url: "sqlite:///${OOPS"}'))

    assert problems == ["database.url: unterminated '${' (write '$${' for a literal)"]


def test_variable_in_a_number_field_is_converted() -> None:
    config = load(
        with_minimal("server: {port: ${PORT}, requestTimeoutSeconds: ${T}}"),
        {"PORT": "8080", "T": "2.5"},
    )

    assert config.server.port == 8080
    assert config.server.request_timeout_seconds == 2.5


def test_variable_in_a_bool_field_is_converted() -> None:
    config = load(with_minimal("telemetry: {enabled: ${TELEMETRY}}"), {"TELEMETRY": "false"})

    assert config.telemetry.enabled is False


def test_literal_quoted_number_is_still_a_type_error() -> None:
    assert problems_of(with_minimal('server: {port: "8080"}')) == [
        "server.port: expected int, got str"
    ]


def test_variable_that_is_not_a_number_is_a_type_error_without_its_value() -> None:
    problems = problems_of(with_minimal("server: {port: ${PORT}}"), {"PORT": "s3cret-value"})

    assert problems == ["server.port: expected int, got str (from ${PORT})"]


def test_a_problem_with_a_value_made_of_variables_names_each_once() -> None:
    problems = problems_of(
        with_minimal("server: {port: ${A}${B}${A}}"), {"A": "40", "B": "s3cret-value"}
    )

    assert problems == ["server.port: expected int, got str (from ${A}, ${B})"]


def test_a_bound_broken_by_a_variable_names_it() -> None:
    assert problems_of(with_minimal("server: {port: ${PORT}}"), {"PORT": "99999"}) == [
        "server.port: must be <= 65535 (from ${PORT})"
    ]


def test_environment_value_is_never_quoted_in_an_error() -> None:
    problems = problems_of(
        """
        providers: [{id: p, adapter: "${ADAPTER}", baseUrl: "https://x.example"}]
        configurations: [{id: c, mode: fixed, model: "${MODEL}"}]
        """,
        {"ADAPTER": "topsecret-adapter", "MODEL": "topsecret-model"},
    )

    assert problems == [
        "providers[0].adapter: unknown adapter (from ${ADAPTER}) (expected one of "
        "openai, azure_openai, anthropic, gemini, vertex, ollama, openrouter, groq, together, "
        "mistral, custom, echo, bedrock)",
        "configurations[0].model: unknown model (from ${MODEL}) (no model is defined)",
    ]
    assert not any("topsecret" in p for p in problems)


def test_keys_from_the_environment_never_appear_in_errors() -> None:
    secret = "sk-live-very-secret"
    problems = problems_of(
        MINIMAL
        + """
auth:
  adminKey: ${KEY}
  keys:
    - {id: a, key: ${KEY}}
    - {id: b, key: ${KEY}}
""",
        {"KEY": secret},
    )

    assert problems == [
        "auth.keys[0]: same key as auth.adminKey",
        "auth.keys[1]: same key as auth.adminKey",
    ]
    assert not any(secret in p for p in problems)


def test_mapping_keys_are_not_interpolated() -> None:
    problems = problems_of(with_minimal("server: {${X}: 1}"), {"X": "port"})

    assert problems == ["server.${X}: unknown key"]
