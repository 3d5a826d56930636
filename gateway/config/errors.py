"""Configuration problems: collected while loading, raised together.

Every problem reads ``yaml.path: message`` (``models[2].price.input: must be
>= 0``). Messages never quote a key or a value taken from the environment.
"""

from __future__ import annotations

from gateway.domain.errors import GatewayException

ROOT = "<root>"


class ConfigError(GatewayException):
    """The configuration is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = list(problems)
        count = len(self.problems)
        header = f"invalid configuration ({count} problem{'s' if count != 1 else ''}):"
        super().__init__("\n".join([header, *(f"  {p}" for p in self.problems)]))


def child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def item(path: str, index: int) -> str:
    return f"{path}[{index}]"


class Problems:
    """Collects problems by YAML path.

    A path that already has a problem (or sits under one) gets no second,
    consequential problem: a field that failed to parse falls back to its
    default, and re-validating that default would only add noise.
    """

    def __init__(self) -> None:
        self._entries: list[tuple[str, str]] = []
        # Paths whose value came from ${NAME}: never echo those values.
        self.from_environment: set[str] = set()

    def add(self, path: str, message: str) -> None:
        if self.has_problem_at(path):
            return
        self._entries.append((path, message))

    def add_located(self, location: str, message: str) -> None:
        """A problem with no YAML path (syntax errors): ``source:line:column``."""
        self._entries.append((location, message))

    def has_problem_at(self, path: str) -> bool:
        return any(
            path == p or path.startswith(p + ".") or path.startswith(p + "[")
            for p, _ in self._entries
        )

    def quote(self, path: str, value: str) -> str:
        """``'value'``, or a placeholder when the value came from the environment."""
        if path in self.from_environment:
            return "(value from the environment)"
        return repr(value)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def lines(self) -> list[str]:
        return [f"{path or ROOT}: {message}" for path, message in self._entries]
