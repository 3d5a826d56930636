"""The YAML layer: exact decimals, syntax errors with positions, a mapping on top."""

from __future__ import annotations

from decimal import Decimal

import pytest

from .support import load, problems_of


def _price_of(text: str) -> tuple[Decimal, Decimal]:
    price = (
        load(
            f"""
        providers: [{{id: demo, adapter: echo}}]
        models: [{{id: m, provider: demo, price: {text}}}]
        """
        )
        .model("m")
        .price
    )
    assert price is not None
    return price.input, price.output


def test_prices_keep_the_scalar_text_not_a_binary_float() -> None:
    price_input, price_output = _price_of("{input: 0.1, output: 0.2}")

    assert price_input + price_output == Decimal("0.3")
    assert str(price_input) == "0.1"


def test_price_in_exponent_form_is_exact() -> None:
    price_input, price_output = _price_of("{input: 1e-7, output: 2.5e+3}")

    assert price_input == Decimal("1e-7")
    assert price_output == Decimal("2500")


def test_price_with_many_digits_loses_none() -> None:
    price_input, _ = _price_of("{input: 0.123456789012345678901, output: 3}")

    assert str(price_input) == "0.123456789012345678901"


def test_quoted_price_is_read_as_a_decimal() -> None:
    price_input, _ = _price_of('{input: "0.15", output: 1}')

    assert price_input == Decimal("0.15")


def test_non_finite_price_is_an_error() -> None:
    problems = problems_of(
        """
        providers: [{id: demo, adapter: echo}]
        models: [{id: m, provider: demo, price: {input: .inf, output: 1}}]
        """
    )

    assert problems == ["models[0].price.input: expected a decimal number, got float"]


def test_yaml_syntax_error_names_line_and_column() -> None:
    (problem,) = problems_of("server:\n  port: [1, 2\nmodels: []\n")

    assert (
        problem == "server.port: invalid YAML at line 3, column 7: expected ',' or ']', but got ':'"
    )


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("server:\n  port: 4000\n host: a\n", "server: invalid YAML at line 3, column 2: "),
        ('server:\n  host: "a\n', "server.host: invalid YAML at line 3, column 1: "),
        (
            "providers:\n  - {id: a, adapter: echo}\n  - id: b\n    adapter: [x\n",
            "providers[1].adapter: invalid YAML at line 5, column 1: ",
        ),
        ("[1, 2\n", "<root>: invalid YAML at line 2, column 1: "),
    ],
)
def test_yaml_syntax_error_names_the_yaml_path_nearest_it(text: str, where: str) -> None:
    (problem,) = problems_of(text)

    assert problem.startswith(where)


def test_syntax_error_never_shows_the_offending_text() -> None:
    (problem,) = problems_of('auth:\n  adminKey: "very-secret-admin-key\n')

    assert "very-secret-admin-key" not in problem


def test_top_level_must_be_a_mapping() -> None:
    assert problems_of("- a\n- b\n") == ["<root>: expected a mapping at the top level, got list"]


def test_empty_document_is_an_error() -> None:
    assert problems_of("") == ["<root>: expected a mapping at the top level, got null"]


def test_duplicate_key_is_reported_with_its_position() -> None:
    problems = problems_of("server: {port: 1}\nserver: {port: 2}\n")

    assert problems == ["server: duplicate key at line 2, column 1 (first at line 1)"]


def test_a_duplicate_key_hides_no_other_problem_under_its_path() -> None:
    problems = problems_of(
        "providers: [{id: demo, adapter: echo}]\n"
        "models:\n  - id: m\n    provider: demo\n    provider: demo\n    contextLength: -1\n"
    )

    assert problems == [
        "models[0].provider: duplicate key at line 5, column 5 (first at line 4)",
        "models[0].contextLength: must be > 0",
    ]
