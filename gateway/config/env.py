"""``${NAME}`` interpolation over the parsed YAML tree.

Runs on string scalars (mapping values and list items, never keys) before
any type conversion. A missing variable is a problem naming it, never an
empty string. ``$${`` writes a literal ``${``.

A string that received a substitution is returned as :class:`FromEnvironment`:
only such strings are converted to a non-string field's type
(``port: ${PORT}`` is an int), and their values are never quoted in errors.
A literal ``port: "4000"`` stays a type error.

YAML forbids ``{`` and ``}`` in plain scalars inside flow mappings, so
``{id: a, key: ${KEY}}`` (as docs/configuration.md#auth writes keys) is not YAML. ``shield``
therefore swaps each ``${NAME}`` for private-use characters of the same
length before parsing (positions in syntax errors stay right), and
``interpolate`` swaps them back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from gateway.config.errors import Problems, child, item

_REFERENCE = re.compile(r"\$\$\{|\$\{([^}]*)(\}?)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


_SHIELD_OPEN, _SHIELD_CLOSE = "\ue000\ue001", "\ue002"
_SHIELDABLE = re.compile(r"(?<!\$)\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def shield(text: str) -> str:
    """``text`` with each ``${NAME}`` made safe for YAML's flow context."""
    if any(c in text for c in (*_SHIELD_OPEN, _SHIELD_CLOSE)):
        return text  # the file already uses the private-use characters: leave it
    return _SHIELDABLE.sub(lambda m: f"{_SHIELD_OPEN}{m.group(1)}{_SHIELD_CLOSE}", text)


def _unshield(text: str) -> str:
    return text.replace(_SHIELD_OPEN, "${").replace(_SHIELD_CLOSE, "}")


class FromEnvironment(str):
    """A string scalar that took at least one value from the environment."""

    __slots__ = ()


def interpolate(tree: Any, environ: Mapping[str, str], problems: Problems, path: str = "") -> Any:
    """The tree with every ``${NAME}`` replaced; problems for missing names."""
    if isinstance(tree, dict):
        return {
            _unshield(key) if isinstance(key, str) else key: interpolate(
                value, environ, problems, child(path, _unshield(str(key)))
            )
            for key, value in tree.items()
        }
    if isinstance(tree, list):
        return [
            interpolate(value, environ, problems, item(path, index))
            for index, value in enumerate(tree)
        ]
    if isinstance(tree, str):
        text = _unshield(tree)
        return _substitute(text, environ, problems, path) if "${" in text else text
    return tree


def _substitute(text: str, environ: Mapping[str, str], problems: Problems, path: str) -> str:
    used: list[str] = []
    errors: list[str] = []
    missing: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$${":
            return "${"
        name, closed = match.group(1), match.group(2)
        if not closed:
            errors.append("unterminated '${' (write '$${' for a literal)")
        elif not _NAME.fullmatch(name):
            errors.append(f"invalid environment variable reference '${{{name}}}'")
        elif name not in environ:
            missing.append(name)
        else:
            used.append(name)
            return environ[name]
        return ""

    result = _REFERENCE.sub(replace, text)
    if missing:
        plural = "s" if len(missing) > 1 else ""
        verb = "are" if len(missing) > 1 else "is"
        errors.append(f"environment variable{plural} {', '.join(missing)} {verb} not set")
    if errors:
        problems.add(path, "; ".join(errors))
    if not used:
        return result
    problems.record_environment(path, tuple(dict.fromkeys(used)))
    return FromEnvironment(result)
