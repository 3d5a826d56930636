"""docs/configuration.md documents every key the config schema accepts, with its default.

The convention: each key is written in backticks as its dotted path from the top of the
file (`server.maxBodyBytes`, `configurations[].criteria.minContextLength`), in the first
cell of a table row.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any, Union, get_args, get_origin

import msgspec

from gateway.config.schema import FileSchema

from .markdown import backticked, read_doc, table_rows

DOC = read_doc("configuration.md")


# Keys the branch being merged alongside adds to the schema: documented already, so the
# reverse check must not call them stale until the merge lands.
@dataclass(frozen=True, slots=True)
class Key:
    path: str
    required: bool
    default: Any  # msgspec.NODEFAULT when required or built by a factory


def _unwrap(tp: Any) -> Any:
    """The type behind Annotated[...] and Optional[...]."""
    if get_origin(tp) is Annotated:
        return _unwrap(get_args(tp)[0])
    if get_origin(tp) in (Union, types.UnionType):
        (inner,) = [arg for arg in get_args(tp) if arg is not type(None)]
        return _unwrap(inner)
    return tp


def _is_struct(tp: Any) -> bool:
    return isinstance(tp, type) and issubclass(tp, msgspec.Struct)


def schema_keys(struct: type[msgspec.Struct] = FileSchema, prefix: str = "") -> Iterator[Key]:
    """Every leaf key, recursively: mappings by their dotted path, lists of mappings as []."""
    for field in msgspec.structs.fields(struct):
        path = f"{prefix}.{field.encode_name}" if prefix else field.encode_name
        tp = _unwrap(field.type)
        if get_origin(tp) is list and _is_struct(_unwrap(get_args(tp)[0])):
            yield from schema_keys(_unwrap(get_args(tp)[0]), f"{path}[]")
        elif _is_struct(tp):
            yield from schema_keys(tp, path)
        else:
            yield Key(path, field.required, field.default)


def mapping_paths(struct: type[msgspec.Struct] = FileSchema, prefix: str = "") -> Iterator[str]:
    """The paths of the mappings and lists of mappings themselves (`models[].price`)."""
    for field in msgspec.structs.fields(struct):
        path = f"{prefix}.{field.encode_name}" if prefix else field.encode_name
        tp = _unwrap(field.type)
        if get_origin(tp) is list and _is_struct(_unwrap(get_args(tp)[0])):
            yield path
            yield from mapping_paths(_unwrap(get_args(tp)[0]), f"{path}[]")
        elif _is_struct(tp):
            yield path
            yield from mapping_paths(tp, path)


def documented_rows() -> dict[str, list[str]]:
    """Table rows whose first cell is a backticked key path, by that path."""
    rows: dict[str, list[str]] = {}
    for cells in table_rows(DOC):
        names = backticked(cells[0]) if cells else []
        if len(names) == 1 and cells[0] == f"`{names[0]}`":
            rows.setdefault(names[0], cells)
    return rows


def _header_of(path: str) -> list[str]:
    """The header row of the table holding ``path``'s row."""
    lines = DOC.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"| `{path}` |"))
    while start > 0 and lines[start - 1].startswith("|"):
        start -= 1
    return [cell.strip() for cell in lines[start].strip().split("|")[1:-1]]


def rendered(value: Any) -> str | None:
    """A scalar default as the docs write it; None for what has no one spelling."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int | str | Decimal):
        return str(value)
    return None


def test_the_walk_finds_nested_and_listed_keys() -> None:
    paths = {key.path for key in schema_keys()}
    # The walk itself: it must reach into lists of mappings and nested mappings.
    assert {
        "server.maxBodyBytes",
        "configurations[].criteria.minContextLength",
        "auth.keys[].budget.monthly.cost",
        "models[].price.cacheWrite",
        "exposeModels",
    } <= paths
    assert len(paths) > 70


def test_every_schema_key_has_a_row_in_the_configuration_doc() -> None:
    rows = documented_rows()
    missing = [key.path for key in schema_keys() if key.path not in rows]
    assert not missing, f"docs/configuration.md documents no row for: {missing}"


def test_every_documented_key_exists_in_the_schema() -> None:
    known = {key.path for key in schema_keys()} | set(mapping_paths())
    stale = sorted(set(documented_rows()) - known)
    assert not stale, f"docs/configuration.md documents keys the schema lacks: {stale}"


def test_documented_defaults_match_the_schema() -> None:
    rows = documented_rows()
    wrong: list[str] = []
    for key in schema_keys():
        header = _header_of(key.path)
        if "default" not in header:
            continue
        cell = rows[key.path][header.index("default")]
        if key.required:
            if "required" not in cell:
                wrong.append(f"{key.path}: required, the doc says {cell!r}")
            continue
        expected = rendered(key.default)
        if expected is None or key.default is None:
            continue  # absent (None) or a list: written in words
        shown = backticked(cell)
        if not shown or shown[0] != expected:
            wrong.append(f"{key.path}: default {expected!r}, the doc says {cell!r}")
    assert not wrong, "\n".join(wrong)
