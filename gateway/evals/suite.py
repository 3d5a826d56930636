"""An eval suite file: one JSON object a line, each a prompt and how to grade its answer (pure).

Every bad line is reported (``line N: why``) and then nothing runs; docs/routing.md
("Eval runs") lists the fields.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator, SchemaError

from gateway.domain.errors import GatewayException
from gateway.evals.graders import (
    Exact,
    Grader,
    GraderKind,
    JsonField,
    JsonSchema,
    Number,
    Regex,
    parse_field_path,
)

# Sent with every case unless its ``params`` says otherwise (null removes one).
DEFAULT_PARAMS: dict[str, Any] = {"temperature": 0}
_COMMON = frozenset({"id", "prompt", "system", "messages", "grader", "params"})
_GRADER_FIELDS: dict[GraderKind, tuple[frozenset[str], frozenset[str]]] = {
    # grader: (required fields, optional fields)
    GraderKind.EXACT: (frozenset({"expected"}), frozenset({"ignoreCase"})),
    GraderKind.REGEX: (frozenset({"pattern"}), frozenset({"ignoreCase"})),
    GraderKind.JSON_SCHEMA: (frozenset({"schema"}), frozenset()),
    GraderKind.JSON_FIELD: (frozenset({"field", "expected"}), frozenset()),
    GraderKind.NUMBER: (frozenset({"expected"}), frozenset({"tolerance"})),
}
_ID_LIMIT = 128


@dataclass(frozen=True, slots=True)
class EvalCase:
    line: int  # 1-based line number in the suite file
    id: str
    kind: GraderKind
    grader: Grader
    messages: list[dict[str, Any]] = field(default_factory=list)
    params: dict[str, Any] = field(default_factory=dict)

    def body(self, model: str) -> dict[str, Any]:
        """The chat completion request the case sends, with ``model`` the configuration id."""
        sent: dict[str, Any] = {**DEFAULT_PARAMS}
        for name, value in self.params.items():
            if value is None:
                sent.pop(name, None)
            else:
                sent[name] = value
        return {**sent, "model": model, "messages": self.messages, "stream": False}


class SuiteError(GatewayException, ValueError):
    """Lines that cannot be run, each as ``line N: why``; nothing was run."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def parse_suite(lines: Iterable[str]) -> list[EvalCase]:
    """The cases of a suite; blank lines are skipped. Raises SuiteError listing every bad line."""
    cases: list[EvalCase] = []
    problems: list[str] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            case = parse_case(line, number)
        except ValueError as error:
            problems.append(f"line {number}: {error}")
            continue
        if case.id in seen:
            problems.append(f"line {number}: id {case.id!r} is used on line {seen[case.id]} too")
            continue
        seen[case.id] = number
        cases.append(case)
    if problems:
        raise SuiteError(problems)
    if not cases:
        raise SuiteError(["the suite has no cases"])
    return cases


def parse_case(line: str, number: int) -> EvalCase:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from None
    if not isinstance(data, dict):
        raise ValueError("expected a JSON object")
    kind = _kind(data.get("grader"))
    required, optional = _GRADER_FIELDS[kind]
    missing = sorted(required - data.keys())
    if missing:
        raise ValueError(f"grader {kind.value} needs " + ", ".join(missing))
    unknown = sorted(data.keys() - _COMMON - required - optional)
    if unknown:
        raise ValueError("unknown field " + ", ".join(unknown))
    case_id = data.get("id", f"line {number}")
    if not isinstance(case_id, str) or not case_id or len(case_id) > _ID_LIMIT:
        raise ValueError(f"id must be a non-empty string of at most {_ID_LIMIT} characters")
    params = data.get("params", {})
    if not isinstance(params, dict) or {"model", "messages", "stream"} & params.keys():
        raise ValueError(
            "params must be an object of request fields other than model, messages, stream"
        )
    return EvalCase(number, case_id, kind, _grader(kind, data), _messages(data), params)


def _kind(value: object) -> GraderKind:
    try:
        return GraderKind(str(value))
    except ValueError:
        names = ", ".join(k.value for k in GraderKind)
        if value is None:
            raise ValueError(f"grader is required: one of {names}") from None
        raise ValueError(f"grader {value!r} is not one of {names}") from None


def _messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    prompt, messages, system = data.get("prompt"), data.get("messages"), data.get("system")
    if (prompt is None) == (messages is None):
        raise ValueError("give either prompt (a string) or messages (a list), not both")
    if messages is not None:
        if system is not None:
            raise ValueError("system goes with prompt; put it in messages instead")
        if not isinstance(messages, list) or not messages:
            raise ValueError("messages must be a non-empty list")
        if not all(isinstance(m, dict) and isinstance(m.get("role"), str) for m in messages):
            raise ValueError("each message must be an object with a role")
        return messages
    if not isinstance(prompt, str) or not prompt:
        raise ValueError("prompt must be a non-empty string")
    if system is not None and not isinstance(system, str):
        raise ValueError("system must be a string")
    head = [{"role": "system", "content": system}] if system else []
    return [*head, {"role": "user", "content": prompt}]


def _grader(kind: GraderKind, data: dict[str, Any]) -> Grader:
    ignore_case = data.get("ignoreCase", False)
    if not isinstance(ignore_case, bool):
        raise ValueError("ignoreCase must be true or false")
    expected = data.get("expected")
    if kind is GraderKind.EXACT:
        if not isinstance(expected, str):
            raise ValueError("expected must be a string for grader exact")
        return Exact(expected, ignore_case)
    if kind is GraderKind.REGEX:
        return Regex(_pattern(data["pattern"], ignore_case))
    if kind is GraderKind.JSON_SCHEMA:
        return JsonSchema(_schema(data["schema"]))
    if kind is GraderKind.JSON_FIELD:
        path = data["field"]
        if not isinstance(path, str):
            raise ValueError("field must be a dotted path such as 'address.city'")
        return JsonField(parse_field_path(path), expected)
    tolerance = data.get("tolerance", 0)
    if not isinstance(expected, int | float) or isinstance(expected, bool):
        raise ValueError("expected must be a number for grader number")
    if not isinstance(tolerance, int | float) or isinstance(tolerance, bool) or tolerance < 0:
        raise ValueError("tolerance must be a number >= 0")
    return Number(float(expected), float(tolerance))


def _pattern(value: object, ignore_case: bool) -> re.Pattern[str]:
    if not isinstance(value, str) or not value:
        raise ValueError("pattern must be a non-empty string")
    try:
        return re.compile(value, re.IGNORECASE if ignore_case else 0)
    except re.error as error:
        raise ValueError(f"pattern is not a valid regular expression: {error}") from None


def _schema(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError("schema must be a JSON Schema object")
    try:
        Draft202012Validator.check_schema(value)
    except SchemaError as error:
        raise ValueError(f"schema is not a valid JSON Schema: {error.message}") from None
    return value
