"""docs/telemetry.md documents every column of every table, in its table's section, and
every ``error_class`` and ``usage_source`` value the gateway writes."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

import msgspec

import gateway.db.budget_tables
import gateway.db.rollup_tables
import gateway.db.tables  # noqa: F401  (both register their tables on the metadata)
from gateway.db.base import metadata
from gateway.domain.errors import GatewayError
from gateway.telemetry.records import TelemetryRecord
from gateway.upstream.base import ERROR_CLASS

from .markdown import ROOT, backticked, read_doc, section, table_rows

DOC = read_doc("telemetry.md")
# The heading under which each table's columns are documented.
SECTIONS = {
    "telemetry": "## `telemetry`",
    "usage_daily": "## `usage_daily`",
    "telemetry_hourly": "## `telemetry_hourly`",
    "telemetry_hourly_latency": "## `telemetry_hourly_latency`",
    "eval_results": "## `eval_results`",
    "budget_counters": "## Budget and cache tables",
    "budget_reservations": "## Budget and cache tables",
    "response_cache": "## Budget and cache tables",
}


def test_every_table_has_a_section() -> None:
    assert set(metadata.tables) == set(SECTIONS), "a table was added: give it a section"


def test_every_column_is_documented_in_its_tables_section() -> None:
    missing: list[str] = []
    for name, table in metadata.tables.items():
        body = section(DOC, SECTIONS[name].removeprefix("## "))
        if name in ("budget_counters", "budget_reservations", "response_cache"):
            body = body.split(f"`{name}`", 1)[1]  # from the table's own introduction on
        cells = {tick for row in table_rows(body) for tick in backticked(row[0])}
        missing += [f"{name}.{c.name}" for c in table.columns if c.name not in cells]
    assert not missing, f"docs/telemetry.md documents no row for: {missing}"


def _target_names(node: ast.AST) -> tuple[list[str], ast.expr | None]:
    """The names an assignment assigns (``x.name = ...`` and ``name = ...``) and its value."""
    targets: list[ast.expr] = []
    value: ast.expr | None = None
    if isinstance(node, ast.Assign):
        targets, value = node.targets, node.value
    elif isinstance(node, ast.AnnAssign):
        targets, value = [node.target], node.value
    names = [t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "") for t in targets]
    return names, value


def _string(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _assigned_constants(attribute: str) -> Iterator[str]:
    """String constants assigned to ``attribute`` or returned by functions named
    ``*_{attribute}``, anywhere in gateway/."""
    for path in sorted((ROOT / "gateway").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names, value = _target_names(node)
            if attribute in names and (text := _string(value)) is not None:
                yield text
            if isinstance(node, ast.FunctionDef) and node.name.endswith(f"_{attribute}"):
                returns = (n for n in ast.walk(node) if isinstance(n, ast.Return))
                yield from (t for r in returns if (t := _string(r.value)) is not None)


def _classes(cls: type[GatewayError]) -> Iterator[type[GatewayError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _classes(sub)


def error_classes() -> set[str]:
    values = set(ERROR_CLASS.values()) | set(_assigned_constants("error_class"))
    values |= {c.error_class for c in _classes(GatewayError) if c.error_class is not None}
    return values


def _value_rows(heading: str) -> set[str]:
    return {tick for row in table_rows(section(DOC, heading)) for tick in backticked(row[0])}


def test_the_walk_finds_the_error_classes_set_outside_the_kinds_table() -> None:
    found = error_classes()
    assert {"client_disconnected", "circuit_open", "budget_error", "stream_cut"} <= found


def test_every_error_class_has_a_row() -> None:
    rows = _value_rows("`error_class` values")
    missing = sorted(error_classes() - rows)
    assert not missing, f"docs/telemetry.md lacks error_class values: {missing}"
    stale = sorted(rows - error_classes())
    assert not stale, f"docs/telemetry.md lists error_class values nothing writes: {stale}"


def _default_of(struct: type[msgspec.Struct], name: str) -> Any:
    (field,) = [f for f in msgspec.structs.fields(struct) if f.name == name]
    return field.default


def test_every_usage_source_has_a_row() -> None:
    values = set(_assigned_constants("usage_source"))
    values.add(_default_of(TelemetryRecord, "usage_source"))
    assert {"provider", "estimated", "none"} <= values
    rows = _value_rows("`usage_source` values")
    assert not sorted(values - rows), (
        f"docs/telemetry.md lacks usage_source values: {values - rows}"
    )
