"""docs/telemetry.md documents every column of every table, in its table's section, and
every ``error_class`` and ``usage_source`` value the gateway writes.

The row's ``error_class`` and ``usage_source`` are typed ``ErrorClass`` and ``UsageSource``
(mypy checks every assignment), so their members are what the gateway can write."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import msgspec

import gateway.db.budget_tables
import gateway.db.console_tables
import gateway.db.rollup_tables
import gateway.db.tables  # noqa: F401  (both register their tables on the metadata)
from gateway.db.base import metadata
from gateway.domain.errors import GatewayError
from gateway.domain.failures import ERROR_CLASS, ErrorClass, FailureKind
from gateway.domain.usage import UsageSource
from gateway.telemetry.records import TelemetryRecord

from .markdown import ROOT, backticked, read_doc, section, table_rows

DOC = read_doc("telemetry.md")
# The heading under which each table's columns are documented.
SECTIONS = {
    "telemetry": "## `telemetry`",
    "usage_daily": "## `usage_daily`",
    "telemetry_hourly": "## `telemetry_hourly`",
    "telemetry_hourly_latency": "## `telemetry_hourly_latency`",
    "telemetry_hourly_histogram": "## `telemetry_hourly_histogram`",
    "telemetry_daily": "## `telemetry_daily`",
    "telemetry_daily_histogram": "## `telemetry_daily_histogram`",
    "eval_results": "## `eval_results`",
    "budget_counters": "## Budget and cache tables",
    "budget_reservations": "## Budget and cache tables",
    "response_cache": "## Budget and cache tables",
    "console_revoked_sessions": "## `console_revoked_sessions`",
    "telemetry_batches": "## `telemetry_batches`",
    "managed_keys": "## Keys, teams and the admin audit",
    "managed_teams": "## Keys, teams and the admin audit",
    "admin_audit": "## Keys, teams and the admin audit",
    "governance_changes": "## Keys, teams and the admin audit",
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


def _classes(cls: type[GatewayError]) -> Iterator[type[GatewayError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _classes(sub)


def test_every_failure_kind_has_an_error_class() -> None:
    assert set(ERROR_CLASS) == set(FailureKind)


def test_every_error_class_is_written_by_something() -> None:
    """A member nothing can produce would be a documented value no row ever holds."""
    written = set(ERROR_CLASS.values())
    written |= {c.error_class for c in _classes(GatewayError) if c.error_class is not None}
    sources = (ROOT / "gateway").rglob("*.py")
    # Where the members are defined does not count: only a use of one writes it.
    text = "\n".join(p.read_text("utf-8") for p in sources if p.name != "failures.py")
    written |= {e for e in ErrorClass if f"ErrorClass.{e.name}" in text}
    assert written == set(ErrorClass)


def _value_rows(heading: str) -> set[str]:
    return {tick for row in table_rows(section(DOC, heading)) for tick in backticked(row[0])}


def test_every_error_class_has_a_row() -> None:
    rows = _value_rows("`error_class` values")
    missing = sorted(set(ErrorClass) - rows)
    assert not missing, f"docs/telemetry.md lacks error_class values: {missing}"
    stale = sorted(rows - set(ErrorClass))
    assert not stale, f"docs/telemetry.md lists error_class values nothing writes: {stale}"


def _default_of(struct: type[msgspec.Struct], name: str) -> Any:
    (field,) = [f for f in msgspec.structs.fields(struct) if f.name == name]
    return field.default


def test_every_usage_source_has_a_row() -> None:
    assert _default_of(TelemetryRecord, "usage_source") is UsageSource.NONE
    rows = _value_rows("`usage_source` values")
    assert rows == set(UsageSource), f"docs/telemetry.md and UsageSource differ: {rows}"
