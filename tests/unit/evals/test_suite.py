"""Suite files: what each line may say, and every bad line reported."""

from __future__ import annotations

import json

import pytest

from gateway.evals.graders import Exact, GraderKind, JsonField, JsonSchema, Number, Regex
from gateway.evals.suite import SuiteError, parse_suite


def _lines(*objects: object) -> list[str]:
    return [o if isinstance(o, str) else json.dumps(o) for o in objects]


def test_each_grader_parses_and_the_prompt_becomes_messages() -> None:
    cases = parse_suite(
        _lines(
            {"id": "cap", "prompt": "Capital of France?", "grader": "exact", "expected": "Paris"},
            {"prompt": "Year?", "system": "Be terse.", "grader": "regex", "pattern": "19\\d\\d"},
            {"prompt": "P?", "grader": "jsonSchema", "schema": {"type": "object"}},
            {"prompt": "F?", "grader": "jsonField", "field": "a.0", "expected": None},
            {"prompt": "N?", "grader": "number", "expected": 3, "tolerance": 0.5},
            "",
        )
    )
    assert [c.kind for c in cases] == list(GraderKind)
    assert isinstance(cases[0].grader, Exact) and cases[0].id == "cap"
    assert isinstance(cases[1].grader, Regex) and cases[1].id == "line 2"
    assert cases[1].messages == [
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "Year?"},
    ]
    assert isinstance(cases[2].grader, JsonSchema)
    assert cases[3].grader == JsonField(("a", 0), None)
    assert cases[4].grader == Number(3.0, 0.5)


def test_the_request_body_defaults_to_temperature_0_and_params_override() -> None:
    first, second, third = parse_suite(
        _lines(
            {"prompt": "a", "grader": "exact", "expected": "a"},
            {"prompt": "b", "grader": "exact", "expected": "b", "params": {"temperature": None}},
            {
                "messages": [{"role": "user", "content": "c"}],
                "grader": "exact",
                "expected": "c",
                "params": {"max_tokens": 5, "temperature": 0.7},
            },
        )
    )
    assert first.body("chat") == {
        "temperature": 0,
        "model": "chat",
        "messages": [{"role": "user", "content": "a"}],
        "stream": False,
    }
    assert "temperature" not in second.body("chat")
    assert third.body("x")["max_tokens"] == 5 and third.body("x")["temperature"] == 0.7


def test_every_bad_line_is_reported_with_its_number() -> None:
    with pytest.raises(SuiteError) as raised:
        parse_suite(
            [
                "not json",
                json.dumps([1]),
                json.dumps({"prompt": "a"}),
                json.dumps({"prompt": "a", "grader": "fuzzy"}),
                json.dumps({"prompt": "a", "grader": "regex"}),
                json.dumps({"prompt": "a", "grader": "regex", "pattern": "("}),
                json.dumps({"prompt": "a", "grader": "exact", "expected": 1}),
                json.dumps({"prompt": "a", "grader": "exact", "expected": "a", "color": 1}),
                json.dumps({"grader": "exact", "expected": "a"}),
                json.dumps({"prompt": "a", "grader": "jsonSchema", "schema": {"type": 5}}),
                json.dumps({"prompt": "a", "grader": "number", "expected": "3"}),
                json.dumps({"prompt": "a", "grader": "number", "expected": 3, "tolerance": -1}),
                json.dumps(
                    {"prompt": "a", "grader": "exact", "expected": "a", "params": {"model": "x"}}
                ),
                json.dumps({"id": "d", "prompt": "a", "grader": "exact", "expected": "a"}),
                json.dumps({"id": "d", "prompt": "b", "grader": "exact", "expected": "b"}),
            ]
        )
    problems = raised.value.problems
    assert [p.split(":")[0] for p in problems] == [f"line {n}" for n in range(1, 14)] + ["line 15"]
    assert problems[0] == "line 1: not valid JSON (Expecting value)"
    assert problems[2].startswith("line 3: grader is required: one of exact, regex")
    assert problems[4] == "line 5: grader regex needs pattern"
    assert "not a valid regular expression" in problems[5]
    assert problems[7] == "line 8: unknown field color"
    assert "give either prompt" in problems[8]
    assert "not a valid JSON Schema" in problems[9]
    assert problems[13] == "line 15: id 'd' is used on line 14 too"


def test_an_empty_suite_is_refused() -> None:
    with pytest.raises(SuiteError, match="no cases"):
        parse_suite(["", "  "])
