"""docs/api.md's error table lists every code the gateway can answer, with its status.

Codes come from two places: the error tree (``GatewayError`` and its subclasses, each
with its status and code) and the answers built elsewhere, found in the source: dict
entries keyed ``"code"``, ``*_CODES`` tables (status -> code), their ``.get`` defaults, and
arguments bound to a parameter named ``code``.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator

from gateway.domain.errors import GatewayError, error_type_for

from .markdown import ROOT, backticked, read_doc, table_rows

DOC = read_doc("api.md")
MARKER = "<!-- error-table -->"
SOURCES = sorted((ROOT / "gateway").rglob("*.py"))


def error_table() -> list[tuple[str, str, str]]:
    """(status cell, code, type) of each row of the table after the marker."""
    assert MARKER in DOC, "docs/api.md lost its error-table marker"
    table = DOC.split(MARKER, 1)[1].split("\n\n", 1)[0]
    rows = []
    for cells in table_rows(table):
        codes = backticked(cells[1])
        assert len(codes) == 1, f"one code per row: {cells}"
        types = backticked(cells[2])
        rows.append((cells[0], codes[0], types[0] if types else cells[2]))
    return rows


def _subclasses(cls: type[GatewayError]) -> Iterator[type[GatewayError]]:
    yield cls
    for sub in cls.__subclasses__():
        yield from _subclasses(sub)


def error_tree() -> set[tuple[int, str]]:
    """(status, code) of every error class, each way it can answer."""
    found: set[tuple[int, str]] = set()
    for cls in _subclasses(GatewayError):
        parameters = inspect.signature(cls).parameters
        if "caller_fault" in parameters:  # 400 or 503 depending on whose fault it is
            instances = [cls("x", caller_fault=True), cls("x", caller_fault=False)]  # type: ignore[call-arg]
        else:
            instances = [cls("x")]
        found |= {(error.http_status, error.code) for error in instances}
    return found


def _constants(node: ast.AST) -> Iterator[str]:
    for child in ast.walk(node):
        if isinstance(child, ast.Constant) and isinstance(child.value, str):
            yield child.value


def _code_parameters(trees: list[ast.Module]) -> dict[str, tuple[int, ast.expr | None]]:
    """Functions with a parameter named ``code``: its position and default."""
    found: dict[str, tuple[int, ast.expr | None]] = {}
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                names = [a.arg for a in node.args.args]
                if "code" in names:
                    position = names.index("code")
                    offset = len(names) - len(node.args.defaults)
                    default = node.args.defaults[position - offset] if position >= offset else None
                    found[node.name] = (position, default)
    return found


def _called_name(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def _is_codes_table(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Dict)
        and any(isinstance(t, ast.Name) and t.id.endswith("_CODES") for t in node.targets)
    )


def _table_entries(table: ast.Dict) -> Iterator[tuple[int | None, str]]:
    """(status or None, code) of a ``*_CODES`` dict literal."""
    for key, value in zip(table.keys, table.values, strict=True):
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            status = key.value if isinstance(key, ast.Constant) else None
            yield (status if isinstance(status, int) else None), value.value


def _is_codes_lookup(call: ast.Call) -> bool:
    """``SOME_CODES.get(key, default)``: the default is a code too."""
    func = call.func
    return (
        isinstance(func, ast.Attribute)
        and func.attr == "get"
        and isinstance(func.value, ast.Name)
        and func.value.id.endswith("_CODES")
        and len(call.args) == 2
    )


def _bound_codes(call: ast.Call, takes_code: dict[str, tuple[int, ast.expr | None]]) -> set[str]:
    """Codes passed to a function's ``code`` parameter, by keyword or by position."""
    name = _called_name(call)
    if name not in takes_code:
        return set()
    position = takes_code[name][0]
    bound = [k.value for k in call.keywords if k.arg == "code"]
    if len(call.args) > position:
        bound.append(call.args[position])
    return {code for expr in bound for code in _constants(expr)}


def source_codes() -> tuple[set[str], set[tuple[int, str]]]:
    """Codes answers are built with outside the error tree; (status, code) where known."""
    trees = [ast.parse(path.read_text(encoding="utf-8")) for path in SOURCES]
    takes_code = _code_parameters(trees)
    codes = {
        str(d.value) for _, d in takes_code.values() if isinstance(d, ast.Constant) and d.value
    }
    pairs: set[tuple[int, str]] = set()
    for node in (node for tree in trees for node in ast.walk(tree)):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code":
                    codes |= set(_constants(value))
        if _is_codes_table(node):
            assert isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
            for status, code in _table_entries(node.value):
                codes.add(code)
                if status is not None:
                    pairs.add((status, code))
        if isinstance(node, ast.Call):
            if _is_codes_lookup(node):
                codes |= set(_constants(node.args[1]))
            codes |= _bound_codes(node, takes_code)
    return codes, pairs


def test_the_source_walk_finds_codes_built_outside_the_error_tree() -> None:
    codes, pairs = source_codes()
    # A handful the walk must see, or it finds nothing at all.
    assert {"stream_cut", "upstream_error", "unsupported_operation"} <= codes
    assert (502, "stream_cut") not in pairs  # a stream's event has no status of its own


def test_every_error_class_answers_a_row_with_its_status_and_type() -> None:
    rows = {(status, code): kind for status, code, kind in error_table()}
    missing = [pair for pair in sorted(error_tree()) if (str(pair[0]), pair[1]) not in rows]
    assert not missing, f"docs/api.md's error table lacks (status, code): {missing}"
    wrong = {
        pair: kind
        for pair, kind in rows.items()
        if pair[0].isdigit() and kind != error_type_for(int(pair[0]))
    }
    assert not wrong, f"rows whose type does not follow the status: {wrong}"


def test_every_code_built_elsewhere_is_in_the_table() -> None:
    codes, pairs = source_codes()
    table = error_table()
    listed = {code for _, code, _ in table}
    assert not sorted(codes - listed), f"codes missing from the table: {sorted(codes - listed)}"
    with_status = {(status, code) for status, code, _ in table}
    missing = [pair for pair in sorted(pairs) if (str(pair[0]), pair[1]) not in with_status]
    assert not missing, f"(status, code) missing from the table: {missing}"


def test_the_table_lists_no_code_the_gateway_never_answers() -> None:
    known = {code for _, code in error_tree()} | source_codes()[0]
    stale = sorted({code for _, code, _ in error_table()} - known)
    assert not stale, f"docs/api.md lists codes nothing answers: {stale}"


def test_the_marker_table_is_the_one_with_the_statuses() -> None:
    statuses = {status for status, _, _ in error_table()}
    assert {"400", "401", "403", "404", "429", "502", "503", "504"} <= statuses
