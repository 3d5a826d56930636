"""YAML text -> plain Python tree, with floats kept exact.

Floats become ``Decimal`` built from the scalar's own text, so ``0.1`` is
``Decimal("0.1")`` and never passes through a binary float. The YAML 1.2 float
forms PyYAML 1.1 misses (``1e-7``, ``2.5e3``) are floats too. Duplicate keys,
which PyYAML silently overwrites, are reported.

A problem of the text names the YAML path nearest it and its line, never the
file (whoever prints the problem names the file once): ``server.port: invalid
YAML at line 3, column 1: ...``, ``server: duplicate key at line 4, column 1
(first at line 1)``.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from gateway.config.errors import Problems, child, item

_FLOAT_TAG = "tag:yaml.org,2002:float"
# YAML 1.2 core-schema floats that YAML 1.1 reads as strings (an exponent
# without a dot, or without a sign).
_EXTRA_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$")


class _ExactLoader(yaml.SafeLoader):
    def construct_yaml_float_exact(self, node: yaml.ScalarNode) -> Decimal:
        text = str(self.construct_scalar(node)).replace("_", "")
        try:
            return Decimal(text)
        except InvalidOperation:
            # .inf, .nan and sexagesimal forms: let PyYAML read them.
            return Decimal(repr(SafeConstructor.construct_yaml_float(self, node)))


_ExactLoader.add_constructor(_FLOAT_TAG, _ExactLoader.construct_yaml_float_exact)
_ExactLoader.add_implicit_resolver(_FLOAT_TAG, _EXTRA_FLOAT, list("-+0123456789."))


class _SyntaxError:
    """Returned for a text that is not YAML (an empty document is ``None``)."""


SYNTAX_ERROR = _SyntaxError()


def parse_yaml(text: str, problems: Problems) -> Any:
    """The document's tree; on a syntax error, a problem and SYNTAX_ERROR."""
    loader = _ExactLoader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            for path, mark, first in _duplicate_keys(node):
                problems.add_located(
                    path,
                    f"duplicate key at line {mark.line + 1}, column {mark.column + 1} "
                    f"(first at line {first.line + 1})",
                )
        tree = None if node is None else loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        # Only the problem and its position: the snippet PyYAML appends could
        # show a key written in the file.
        at = exc.problem_mark or exc.context_mark
        where = f" at line {at.line + 1}, column {at.column + 1}" if at else ""
        problems.add_located(
            _path_at_error(text), f"invalid YAML{where}: {exc.problem or exc.context}"
        )
        return SYNTAX_ERROR
    except yaml.YAMLError as exc:
        problems.add_located(_path_at_error(text), f"invalid YAML: {type(exc).__name__}")
        return SYNTAX_ERROR
    finally:
        loader.dispose()
    return tree


def _key_text(node: yaml.Node) -> str:
    return str(node.value) if isinstance(node, yaml.ScalarNode) else "?"


def _duplicate_keys(root: yaml.Node) -> list[tuple[str, yaml.Mark, yaml.Mark]]:
    """Each key written twice in one mapping: its path, where it is again, where it was first."""
    found: list[tuple[str, yaml.Mark, yaml.Mark]] = []
    seen: set[int] = set()  # anchors make a graph: visit each node once
    pending: list[tuple[yaml.Node, str]] = [(root, "")]
    while pending:
        node, path = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, yaml.Mark] = {}
            for key_node, value_node in node.value:
                key = _key_text(key_node)
                if key in first:
                    found.append((child(path, key), key_node.start_mark, first[key]))
                else:
                    first[key] = key_node.start_mark
                pending.append((value_node, child(path, key)))
        elif isinstance(node, yaml.SequenceNode):
            pending.extend((value, item(path, index)) for index, value in enumerate(node.value))
    found.sort(key=lambda entry: (entry[1].line, entry[1].column))
    return found


class _Open:
    """A mapping or list the parser had started and not ended when the error came."""

    __slots__ = ("index", "is_mapping", "key", "wants_key")

    def __init__(self, is_mapping: bool) -> None:
        self.is_mapping = is_mapping
        self.key: str | None = None
        self.wants_key = True
        self.index = -1


def _path_at_error(text: str) -> str:
    """The YAML path of the innermost mapping key or list the text was in when it stopped
    being YAML (``""`` at the top level), found by replaying the parser's events."""
    stack: list[_Open] = []
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.MappingEndEvent | yaml.SequenceEndEvent):
                if stack:
                    stack.pop()
                if stack and stack[-1].is_mapping:
                    stack[-1].wants_key = True
                continue
            if not isinstance(event, yaml.NodeEvent):
                continue
            starts = isinstance(event, yaml.CollectionStartEvent)
            if stack:
                parent = stack[-1]
                if not parent.is_mapping:
                    parent.index += 1
                elif parent.wants_key:  # a key (a mapping or list as a key reads as "?")
                    parent.key = str(event.value) if isinstance(event, yaml.ScalarEvent) else "?"
                    parent.wants_key = False
                elif not starts:  # a scalar value: the next event is a key
                    parent.wants_key = True
            if starts:
                stack.append(_Open(isinstance(event, yaml.MappingStartEvent)))
    except yaml.YAMLError:
        return _path_of(stack)
    return ""


def _path_of(stack: list[_Open]) -> str:
    """The path into the innermost open node: the key it was reading or had just read
    (a line indented wrongly after ``server:``'s block is nearest ``server``)."""
    path = ""
    for depth, frame in enumerate(stack):
        innermost = depth == len(stack) - 1
        if frame.is_mapping:
            if frame.key is not None:
                path = child(path, frame.key)
        elif not innermost and frame.index >= 0:
            path = item(path, frame.index)
    return path.replace("\ue000\ue001", "${").replace("\ue002", "}")
