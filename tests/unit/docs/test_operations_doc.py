"""docs/operations.md documents every metric the gateway registers, with its type; no doc
names a metric that does not exist."""

from __future__ import annotations

import re

from gateway.metrics import Metrics

from .markdown import DOCS, ROOT, backticked, read_doc, table_rows

DOC = read_doc("operations.md")
# What Prometheus appends to a family's name in the text format.
_SUFFIXES = ("_total", "_bucket", "_sum", "_count", "_created")


def registered() -> dict[str, str]:
    """Metric family name -> type (counter, gauge, histogram)."""
    return {family.name: family.type for family in Metrics().registry.collect()}


def documented() -> dict[str, str]:
    """The metrics table: backticked name in the first cell, type in the second."""
    rows = {}
    for cells in table_rows(DOC):
        names = backticked(cells[0]) if cells else []
        if len(names) == 1 and names[0].startswith("gateway_") and len(cells) >= 2:
            rows[names[0]] = cells[1]
    return rows


def test_the_registry_has_the_gateway_metrics() -> None:
    names = registered()
    assert "gateway_requests" in names and "gateway_telemetry_dropped_rows" in names
    assert all(name.startswith("gateway_") for name in names)


def test_every_registered_metric_has_a_row_with_its_type() -> None:
    rows = documented()
    missing = sorted(set(registered()) - set(rows))
    assert not missing, f"docs/operations.md documents no row for: {missing}"
    wrong = {name: rows[name] for name, kind in registered().items() if rows[name] != kind}
    assert not wrong, f"documented types differ from the registry: {wrong}"


def test_no_doc_names_a_metric_that_does_not_exist() -> None:
    known = set(registered())
    texts = [path.read_text(encoding="utf-8") for path in sorted(DOCS.glob("*.md"))]
    texts.append((ROOT / "README.md").read_text(encoding="utf-8"))
    stale = set()
    for text in texts:
        for name in re.findall(r"\bgateway_[a-z_]+", text):
            base = name
            for suffix in _SUFFIXES:
                if base.endswith(suffix) and base[: -len(suffix)] in known:
                    base = base[: -len(suffix)]
            if base not in known:
                stale.add(name)
    assert not stale, f"docs name metrics the gateway does not register: {sorted(stale)}"
