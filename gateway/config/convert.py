"""Phase 1: the interpolated YAML tree -> schema Structs, collecting every problem.

msgspec's own ``convert`` stops at the first error; this walker reads the same
Struct declarations (``msgspec.structs.fields``: camelCase names, defaults)
and keeps going, so one run reports every unknown key and wrong type.

Recovery, so one mistake yields one problem: a field that fails takes its
default when it has one (the caller discards the result anyway); a failed
entry of a list of mappings becomes ``None`` in place, keeping the indexes of
the others; anything else that fails makes its enclosing mapping fail.
"""

from __future__ import annotations

import math
import types
from decimal import Decimal, InvalidOperation
from enum import Enum
from typing import Annotated, Any, Final, TypeVar, Union, get_args, get_origin

import msgspec

from gateway.config.env import FromEnvironment
from gateway.config.errors import Problems, child, item
from gateway.config.schema import Ge, Gt, Identifier, Le, NonEmpty
from gateway.domain.model import AdapterType, Capability, PolicyMode
from gateway.domain.suggest import did_you_mean

S = TypeVar("S", bound=msgspec.Struct)


class _Invalid:
    """Marks a value that failed; its problem is already recorded."""


INVALID: Final = _Invalid()

# How an unknown enum value is named in its problem.
_ENUM_NOUNS: dict[type[Enum], str] = {
    AdapterType: "adapter",
    Capability: "capability",
    PolicyMode: "policy mode",
}
_TRUE = {"true", "yes", "on", "1"}
_FALSE = {"false", "no", "off", "0"}


def to_struct(tree: Any, struct: type[S], problems: Problems, path: str = "") -> S | None:
    value = _convert(tree, struct, problems, path)
    return None if isinstance(value, _Invalid) else value


def yaml_type(value: object) -> str:
    """The YAML name of a parsed value's type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, Decimal | float):
        return "float"
    if isinstance(value, str):
        return "str"
    if isinstance(value, dict):
        return "mapping"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def _convert(value: Any, tp: Any, problems: Problems, path: str) -> Any:
    origin = get_origin(tp)
    if origin is Annotated:
        base, *marks = get_args(tp)
        result = _convert(value, base, problems, path)
        if not isinstance(result, _Invalid):
            return _check_marks(result, marks, problems, path)
        return result
    if origin in (Union, types.UnionType):
        if value is None and type(None) in get_args(tp):
            return None
        (inner,) = [arg for arg in get_args(tp) if arg is not type(None)]
        return _convert(value, inner, problems, path)
    if origin is list:
        return _convert_list(value, get_args(tp)[0], problems, path)
    if origin is dict:
        value_type = get_args(tp)[1]
        if value_type is Any:  # metadata: a small flat mapping of scalars
            return _convert_metadata(value, problems, path)
        return _convert_mapping(value, value_type, problems, path)
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        return _convert_struct(value, tp, problems, path)
    if isinstance(tp, type) and issubclass(tp, Enum):
        return _convert_enum(value, tp, problems, path)
    return _convert_scalar(value, tp, problems, path)


def _convert_struct(value: Any, struct: type[msgspec.Struct], problems: Problems, path: str) -> Any:
    if not isinstance(value, dict):
        problems.add(path, f"expected a mapping, got {yaml_type(value)}")
        return INVALID
    fields = msgspec.structs.fields(struct)
    known = {f.encode_name for f in fields}
    for key in value:
        if key not in known:
            problems.add(child(path, str(key)), _unknown_key(str(key), known))
    kwargs: dict[str, Any] = {}
    failed = False
    for f in fields:
        field_path = child(path, f.encode_name)
        if f.encode_name not in value:
            if f.required:
                problems.add(field_path, "required")
                failed = True
            continue
        converted = _convert(value[f.encode_name], f.type, problems, field_path)
        if not isinstance(converted, _Invalid):
            kwargs[f.name] = converted
        elif f.required:
            failed = True
    return INVALID if failed else struct(**kwargs)


def _unknown_key(key: str, known: set[str]) -> str:
    """``unknown key``, with the field it was most likely meant to be."""
    meant = did_you_mean(key, sorted(known))
    return "unknown key" if meant is None else f"unknown key (did you mean {meant!r}?)"


_METADATA_VALUES = (str, int, float, Decimal, bool, type(None))


def _convert_metadata(value: Any, problems: Problems, path: str) -> Any:
    """A small flat mapping (``metadata``): string keys, scalar values."""
    if not isinstance(value, dict):
        problems.add(path, f"expected mapping, got {yaml_type(value)}")
        return INVALID
    result: dict[str, Any] = {}
    for key, item_value in value.items():
        if not isinstance(key, str) or not isinstance(item_value, _METADATA_VALUES):
            problems.add(child(path, str(key)), "expected a string, number, boolean or null")
            return INVALID
        result[key] = float(item_value) if isinstance(item_value, Decimal) else item_value
    return result


def _convert_list(value: Any, item_type: Any, problems: Problems, path: str) -> Any:
    if not isinstance(value, list):
        problems.add(path, f"expected a list, got {yaml_type(value)}")
        return INVALID
    salvage = isinstance(item_type, type) and issubclass(item_type, msgspec.Struct)
    result: list[Any] = []
    failed = False
    for index, element in enumerate(value):
        converted = _convert(element, item_type, problems, item(path, index))
        if isinstance(converted, _Invalid):
            failed = failed or not salvage
            converted = None
        result.append(converted)
    return INVALID if failed else result


def _convert_mapping(value: Any, value_type: Any, problems: Problems, path: str) -> Any:
    """A mapping of names (strings) to values of ``value_type``."""
    if not isinstance(value, dict):
        problems.add(path, f"expected a mapping, got {yaml_type(value)}")
        return INVALID
    result: dict[str, Any] = {}
    failed = False
    for name, element in value.items():
        if not isinstance(name, str):
            problems.add(path, f"expected names as strings, got {yaml_type(name)}")
            failed = True
            continue
        converted = _convert(element, value_type, problems, f"{path}.{name}")
        failed = failed or isinstance(converted, _Invalid)
        result[name] = converted
    return INVALID if failed else result


def _convert_enum(value: Any, enum: type[Enum], problems: Problems, path: str) -> Any:
    if not isinstance(value, str):
        problems.add(path, f"expected str, got {yaml_type(value)}")
        return INVALID
    try:
        return enum(value)
    except ValueError:
        noun = _ENUM_NOUNS.get(enum, "value")
        shown = problems.quote(path, value)
        allowed = ", ".join(str(member.value) for member in enum)
        problems.add(path, f"unknown {noun} {shown} (expected one of {allowed})")
        return INVALID


def _convert_scalar(value: Any, tp: type, problems: Problems, path: str) -> Any:
    try:
        if isinstance(value, FromEnvironment):
            return _from_text(str(value), tp)
        return _from_yaml(value, tp)
    except (TypeError, ValueError, InvalidOperation):
        problems.add(path, f"expected {_type_name(tp)}, got {yaml_type(value)}")
        return INVALID


def _from_yaml(value: Any, tp: type) -> Any:
    """A YAML-typed scalar as ``tp``; bool is never an int, float never an int."""
    if tp is str and isinstance(value, str):
        return value
    if tp is bool and isinstance(value, bool):
        return value
    if isinstance(value, bool):
        raise TypeError
    if tp is int and isinstance(value, int):
        return value
    if tp is float and isinstance(value, int | Decimal):
        return _finite(float(value))
    if tp is Decimal and isinstance(value, int | Decimal):
        return _finite_decimal(Decimal(value))
    if tp is Decimal and isinstance(value, str):
        # YAML 1.1 reads some number forms as strings; a price may be quoted.
        return _finite_decimal(Decimal(value.strip()))
    raise TypeError


def _from_text(text: str, tp: type) -> Any:
    """A string from the environment, parsed as the field's type."""
    if tp is str:
        return text
    if tp is bool:
        lowered = text.strip().lower()
        if lowered in _TRUE | _FALSE:
            return lowered in _TRUE
        raise ValueError
    if tp is int:
        return int(text.strip())
    if tp is float:
        return _finite(float(text.strip()))
    if tp is Decimal:
        return _finite_decimal(Decimal(text.strip()))
    raise TypeError


def _finite(number: float) -> float:
    if not math.isfinite(number):
        raise ValueError
    return number


def _finite_decimal(number: Decimal) -> Decimal:
    if not number.is_finite():
        raise ValueError
    return number


def _type_name(tp: type) -> str:
    return {Decimal: "a decimal number", float: "a number"}.get(tp, tp.__name__)


def _is_identifier(value: str, max_length: int) -> bool:
    return len(value) <= max_length and all("!" <= c <= "~" for c in value)


def _check_marks(value: Any, marks: list[Any], problems: Problems, path: str) -> Any:
    for mark in marks:
        if isinstance(mark, Ge) and value < mark.bound:
            message = f"must be >= {mark.bound}"
        elif isinstance(mark, Gt) and value <= mark.bound:
            message = f"must be > {mark.bound}"
        elif isinstance(mark, Le) and value > mark.bound:
            message = f"must be <= {mark.bound}"
        elif isinstance(mark, NonEmpty) and not value:
            message = "must not be empty"
        elif isinstance(mark, Identifier) and not _is_identifier(value, mark.max_length):
            message = (
                f"must be at most {mark.max_length} printable ASCII characters without spaces "
                "(ids are sent in response headers)"
            )
        else:
            continue
        problems.add(path, message)
        return INVALID
    return value
