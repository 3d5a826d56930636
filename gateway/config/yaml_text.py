"""YAML text -> plain Python tree, with floats kept exact.

Floats become ``Decimal`` built from the scalar's own text, so ``0.1`` is
``Decimal("0.1")`` and never passes through a binary float. The YAML 1.2 float
forms PyYAML 1.1 misses (``1e-7``, ``2.5e3``) are floats too. Duplicate keys,
which PyYAML silently overwrites, are reported.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from gateway.config.errors import Problems

_FLOAT_TAG = "tag:yaml.org,2002:float"
# YAML 1.2 core-schema floats that YAML 1.1 reads as strings (an exponent
# without a dot, or without a sign).
_EXTRA_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class _ExactLoader(yaml.SafeLoader):
    duplicates: list[tuple[int, int, str]]

    def construct_yaml_float_exact(self, node: yaml.ScalarNode) -> Decimal:
        text = str(self.construct_scalar(node)).replace("_", "")
        try:
            return Decimal(text)
        except InvalidOperation:
            # .inf, .nan and sexagesimal forms: let PyYAML read them.
            return Decimal(repr(SafeConstructor.construct_yaml_float(self, node)))

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                key = key_node.value
                if key in seen:
                    mark = key_node.start_mark
                    self.duplicates.append((mark.line + 1, mark.column + 1, str(key)))
                seen.add(key)
        return super().construct_mapping(node, deep=deep)


_ExactLoader.add_constructor(_FLOAT_TAG, _ExactLoader.construct_yaml_float_exact)
_ExactLoader.add_implicit_resolver(_FLOAT_TAG, _EXTRA_FLOAT, list("-+0123456789."))


class _SyntaxError:
    """Returned for a text that is not YAML (an empty document is ``None``)."""


SYNTAX_ERROR = _SyntaxError()


def parse_yaml(text: str, source: str, problems: Problems) -> Any:
    """The document's tree; on a syntax error, a located problem and SYNTAX_ERROR."""
    loader = _ExactLoader(text)
    loader.duplicates = []
    try:
        tree = loader.get_single_data()
    except yaml.MarkedYAMLError as exc:
        # Only the problem and its position: the snippet PyYAML appends could
        # show a key written in the file.
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problems.add_located(where, f"invalid YAML: {exc.problem or exc.context}")
        return SYNTAX_ERROR
    except yaml.YAMLError as exc:
        problems.add_located(source, f"invalid YAML: {type(exc).__name__}")
        return SYNTAX_ERROR
    finally:
        loader.dispose()
    for line, column, key in loader.duplicates:
        problems.add_located(f"{source}:{line}:{column}", f"duplicate key {key!r}")
    return tree
