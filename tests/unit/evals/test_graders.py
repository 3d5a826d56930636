"""Each grader on answers that pass and answers that fail, with the reason it gives."""

from __future__ import annotations

import re

import pytest

from gateway.evals.graders import (
    Exact,
    JsonField,
    JsonSchema,
    Number,
    Regex,
    json_equal,
    number_in,
    parse_field_path,
    parse_json_answer,
)


def test_exact_strips_whitespace_and_minds_case_unless_told() -> None:
    assert Exact("Paris").grade("  Paris\n").passed
    failed = Exact("Paris").grade("paris")
    assert not failed.passed and failed.reason == '"paris" is not "Paris"'
    assert Exact("Paris", ignore_case=True).grade("PARIS").passed
    assert not Exact("Paris").grade("Paris.").passed


def test_regex_searches_the_answer() -> None:
    grader = Regex(re.compile(r"\b19\d\d\b"))
    assert grader.grade("It was 1969, in July.").passed
    failed = grader.grade("It was 2001.")
    assert not failed.passed and failed.reason == r'"It was 2001." does not match /\b19\d\d\b/'


SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
    "required": ["name", "age"],
}


def test_json_schema_validates_the_answer_or_its_one_fenced_block() -> None:
    grader = JsonSchema(SCHEMA)
    assert grader.grade('{"name": "Ada", "age": 36}').passed
    assert grader.grade('```json\n{"name": "Ada", "age": 36}\n```').passed
    wrong = grader.grade('{"name": "Ada", "age": -1}')
    assert not wrong.passed and wrong.reason.startswith("age: -1 is less than the minimum")
    missing = grader.grade('{"name": "Ada"}')
    assert not missing.passed and "'age' is a required property" in missing.reason
    prose = grader.grade("Ada is 36.")
    assert not prose.passed and prose.reason.startswith("the answer is not JSON")


def test_json_field_follows_a_dotted_path_through_objects_and_arrays() -> None:
    answer = '{"address": {"city": "Paris", "zips": [75001, 75002]}, "ok": true}'
    assert JsonField(("address", "city"), "Paris").grade(answer).passed
    assert JsonField(("address", "zips", 1), 75002).grade(answer).passed
    assert JsonField(("address", "zips", 1), 75002.0).grade(answer).passed
    assert JsonField(("ok",), True).grade(answer).passed
    not_one = JsonField(("ok",), 1).grade(answer)
    assert not not_one.passed and not_one.reason == "ok is true, not 1"
    other = JsonField(("address", "city"), "Lyon").grade(answer)
    assert other.reason == 'address.city is "Paris", not "Lyon"'
    absent = JsonField(("address", "zips", 5), 1).grade(answer)
    assert absent.reason == "the answer has no field address.zips.5"
    assert not JsonField(("a",), 1).grade("[1]").passed


def test_number_within_tolerance() -> None:
    assert Number(3.14159, 0.01).grade("3.14").passed
    assert Number(42, 0).grade("The answer is 42.").passed
    assert Number(1234.5, 0).grade("1,234.5").passed
    assert Number(-2, 0).grade("-2").passed
    far = Number(3.14159, 0.001).grade("3.14")
    assert not far.passed and far.reason == "3.14 is not within 0.001 of 3.14159"
    none = Number(1, 0).grade("no idea")
    assert not none.passed and none.reason == 'no number in "no idea"'


def test_number_in_prefers_the_whole_text_then_the_first_number() -> None:
    assert number_in(" 1e3 ") == 1000.0
    assert number_in("between 4 and 5") == 4.0
    assert number_in("inf") is None
    assert number_in("") is None


@pytest.mark.parametrize(
    ("answer", "number"),
    [
        ("gpt-4o-mini says 42", 42.0),  # the -4 of a model's name is no number
        ("gpt-4o-mini", None),
        ("claude-3 scored 7", 7.0),
        ("v1.5 gives 2", 2.0),
        ("version 1.2.3, then 9", 9.0),
        ("4o or 5x or 6", 6.0),
        ("The answer is -4.", -4.0),
        ("x = -3.75", -3.75),
        ("(12)", 12.0),
        ("$5", 5.0),
        ("10%", 10.0),
        ("+7 up", 7.0),
        ("2e-3 ok", 0.002),
        ("Answer: 3.14. Next", 3.14),
        ("5-4", 5.0),
    ],
)
def test_the_number_taken_is_the_first_that_stands_alone(answer: str, number: float | None) -> None:
    assert number_in(answer) == number


def test_a_model_name_in_the_answer_does_not_fail_the_number_grader() -> None:
    assert Number(4, 0).grade("Using gpt-4o-mini: the answer is 4.").passed
    wrong = Number(-4, 0).grade("gpt-4o-mini thinks 4")
    assert not wrong.passed and wrong.reason == "4 is not within 0 of -4"


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [
        (1, 1.0, True),
        (True, 1, False),
        (False, 0, False),
        ("1", 1, False),
        ({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]}, True),
        ({"a": 1}, {"a": 1, "b": 2}, False),
        ([1, 2], [2, 1], False),
        (None, None, True),
    ],
)
def test_json_equal(a: object, b: object, equal: bool) -> None:
    assert json_equal(a, b) is equal


def test_field_paths() -> None:
    assert parse_field_path("a.b.0") == ("a", "b", 0)
    with pytest.raises(ValueError, match="empty part"):
        parse_field_path("a..b")
    with pytest.raises(ValueError, match="non-empty"):
        parse_field_path("")


def test_a_long_answer_is_clipped_in_the_reason() -> None:
    reason = Exact("x").grade("y" * 500).reason
    assert len(reason) < 80 and "…" in reason
    value, problem = parse_json_answer("{")
    assert value is None and problem is not None
