"""The deterministic graders: an answer's text against a case's expectation (pure).

Each grader says whether the answer passes and, when it does not, why, in a line short
enough for a terminal (docs/routing.md, "Eval runs").
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from jsonschema import Draft202012Validator

# A number that stands alone: not inside a word or another number. Its sign is no
# word's hyphen (the "-4" of "gpt-4o-mini"), its digits follow no letter, digit, "." or
# word-hyphen ("v2", "claude-3"), and no letter, digit or ".digit" follows it ("4o",
# "1.2.3"). A "." ending a sentence ("is 42.") is not part of it.
_NUMBER = re.compile(
    r"(?:(?<![\w.])[-+])?"
    r"(?<![\w.])(?<!\w[-+])"
    r"(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
    r"(?!\.?\w)"
)
_FENCE = re.compile(r"^```[A-Za-z0-9_-]*\s*\n(.*?)\n?```$", re.DOTALL)
_SHOWN = 60  # characters of an answer quoted in a failure's reason


class GraderKind(StrEnum):
    EXACT = "exact"
    REGEX = "regex"
    JSON_SCHEMA = "jsonSchema"
    JSON_FIELD = "jsonField"
    NUMBER = "number"


@dataclass(frozen=True, slots=True)
class Grade:
    passed: bool
    reason: str = ""  # why it failed; empty when it passed


@dataclass(frozen=True, slots=True)
class Exact:
    expected: str
    ignore_case: bool = False

    def grade(self, answer: str) -> Grade:
        got, want = answer.strip(), self.expected.strip()
        if self.ignore_case:
            got, want = got.casefold(), want.casefold()
        if got == want:
            return Grade(True)
        return Grade(False, f"{_quote(answer)} is not {_quote(self.expected)}")


@dataclass(frozen=True, slots=True)
class Regex:
    pattern: re.Pattern[str]

    def grade(self, answer: str) -> Grade:
        if self.pattern.search(answer) is not None:
            return Grade(True)
        return Grade(False, f"{_quote(answer)} does not match /{self.pattern.pattern}/")


@dataclass(frozen=True, slots=True)
class JsonSchema:
    schema: dict[str, Any]

    def grade(self, answer: str) -> Grade:
        value, problem = parse_json_answer(answer)
        if problem is not None:
            return Grade(False, problem)
        error = next(iter(Draft202012Validator(self.schema).iter_errors(value)), None)
        if error is None:
            return Grade(True)
        where = "/".join(str(part) for part in error.absolute_path) or "the answer"
        return Grade(False, f"{where}: {error.message}"[:200])


@dataclass(frozen=True, slots=True)
class JsonField:
    path: tuple[str | int, ...]
    expected: Any

    def grade(self, answer: str) -> Grade:
        value, problem = parse_json_answer(answer)
        if problem is not None:
            return Grade(False, problem)
        shown = field_path_text(self.path)
        for part in self.path:
            if (
                isinstance(part, int)
                and isinstance(value, list)
                and -len(value) <= part < len(value)
            ):
                value = value[part]
            elif isinstance(value, dict) and str(part) in value:
                value = value[str(part)]
            else:
                return Grade(False, f"the answer has no field {shown}")
        if json_equal(value, self.expected):
            return Grade(True)
        got, want = json.dumps(value), json.dumps(self.expected)
        return Grade(False, f"{shown} is {_clip(got)}, not {_clip(want)}")


@dataclass(frozen=True, slots=True)
class Number:
    expected: float
    tolerance: float = 0.0  # absolute

    def grade(self, answer: str) -> Grade:
        value = number_in(answer)
        if value is None:
            return Grade(False, f"no number in {_quote(answer)}")
        if abs(value - self.expected) <= self.tolerance:
            return Grade(True)
        return Grade(False, f"{value:g} is not within {self.tolerance:g} of {self.expected:g}")


Grader = Exact | Regex | JsonSchema | JsonField | Number


def parse_json_answer(answer: str) -> tuple[Any, str | None]:
    """The answer as JSON: the whole text, or the one fenced block it consists of."""
    text = answer.strip()
    fenced = _FENCE.match(text)
    if fenced is not None:
        text = fenced.group(1).strip()
    try:
        return json.loads(text), None
    except json.JSONDecodeError as error:
        return None, f"the answer is not JSON ({error.msg}): {_quote(answer)}"


def number_in(answer: str) -> float | None:
    """The answer as a number: the whole text when it is one, else the first number that
    stands alone in it (see ``_NUMBER``: "gpt-4o-mini" holds none)."""
    text = answer.strip().replace(",", "")
    try:
        value = float(text)
    except ValueError:
        found = _NUMBER.search(text)
        if found is None:
            return None
        value = float(found.group())
    return value if math.isfinite(value) else None


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: 1 equals 1.0, but true is not 1 and "1" is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and bool(a == b)


def parse_field_path(text: str) -> tuple[str | int, ...]:
    """``a.b.0`` -> ("a", "b", 0): a digit-only part also indexes an array."""
    if not text:
        raise ValueError("field must be a non-empty dotted path such as 'address.city'")
    parts: list[str | int] = []
    for part in text.split("."):
        if not part:
            raise ValueError(f"field {text!r} has an empty part")
        parts.append(int(part) if part.isdigit() else part)
    return tuple(parts)


def field_path_text(path: tuple[str | int, ...]) -> str:
    return ".".join(str(part) for part in path)


def _clip(text: str) -> str:
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def _quote(text: str) -> str:
    return json.dumps(_clip(text.strip()), ensure_ascii=False)
