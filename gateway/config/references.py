"""Ids that references may name, and the checks on them."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, TypeVar

from gateway.config.errors import Problems, child, item
from gateway.domain.suggest import SHOWN, closest

T = TypeVar("T")


def parsed_entries(entries: Sequence[T | None]) -> Iterator[tuple[int, T]]:
    """(index, entry) for the entries that parsed; failed ones are None."""
    for index, entry in enumerate(entries):
        if entry is not None:
            yield index, entry


def failed_ids(raw: Any, path: Sequence[str], entries: Sequence[object | None]) -> set[str]:
    """Ids of entries that failed to parse, read from the raw tree.

    References to them are not reported as dangling: the entry has its own
    problem already.
    """
    node = raw
    for key in path:
        node = node.get(key) if isinstance(node, dict) else None
    if not isinstance(node, list):
        return set()
    return {
        raw_entry["id"]
        for raw_entry, entry in zip(node, entries, strict=False)
        if entry is None and isinstance(raw_entry, dict) and isinstance(raw_entry.get("id"), str)
    }


class Ids:
    """The ids of one kind of entry (provider, model, configuration)."""

    def __init__(self, kind: str, problems: Problems, failed: Iterable[str] = ()) -> None:
        self.kind = kind
        self._problems = problems
        self._first: dict[str, str] = {}  # id -> path of its entry
        self._failed = set(failed)

    def __contains__(self, value: object) -> bool:
        return value in self._first

    def claim(self, entry_path: str, value: str) -> bool:
        """Record an entry's id; a problem (and False) when it is taken."""
        if value in self._first:
            shown = self._problems.quote(child(entry_path, "id"), value)
            first = self._first[value]
            self._problems.add(
                child(entry_path, "id"), f"duplicate {self.kind} id {shown} (first at {first})"
            )
            return False
        self._first[value] = entry_path
        return True

    def check(self, path: str, value: str) -> bool:
        """Whether ``value`` names a known entry; a problem when it names none."""
        if value in self._first:
            return True
        if value not in self._failed:
            shown = self._problems.quote(path, value)
            self._problems.add(path, f"unknown {self.kind} {shown}{self._hint(path, value)}")
        return False

    def _hint(self, path: str, value: str) -> str:
        if not self._first:  # entries that failed to parse have problems of their own
            return "" if self._failed else f" (no {self.kind} is defined)"
        # A value read from the environment is not compared with anything: it may be a secret.
        hidden = path in self._problems.from_environment
        shown = list(self._first)[:SHOWN] if hidden else closest(value, self._first)
        return f" (valid: {', '.join(shown)}{', …' if len(self._first) > len(shown) else ''})"

    def check_all(self, path: str, values: Sequence[str]) -> None:
        for index, value in enumerate(values):
            self.check(item(path, index), value)
