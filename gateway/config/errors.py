"""Configuration problems: collected while loading, raised together.

Every problem reads ``yaml.path: message`` (``models[2].price.input: must be
>= 0``). Messages never quote a key or a value taken from the environment; a
problem with such a value names the variables it came from (``(from ${PORT})``).
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
        # (path, message, whether it hides later problems at or under the path)
        self._entries: list[tuple[str, str, bool]] = []
        # Paths whose value came from ${NAME}: never echo those values.
        self.from_environment: set[str] = set()
        self._variables: dict[str, tuple[str, ...]] = {}

    def add(self, path: str, message: str) -> None:
        if self.has_problem_at(path):
            return
        source = self.source_of(path)
        if source and source not in message:
            message = f"{message} {source}"
        self._entries.append((path, message, True))

    def add_located(self, path: str, message: str) -> None:
        """A problem of the text itself (YAML syntax, a duplicate key), at the YAML path
        nearest it; ``message`` says the line. Later problems under ``path`` still count."""
        self._entries.append((path, message, False))

    def record_environment(self, path: str, names: tuple[str, ...]) -> None:
        """The value at ``path`` was made from these variables (in the order written)."""
        self.from_environment.add(path)
        self._variables[path] = names

    def source_of(self, path: str) -> str:
        """``(from ${PORT})`` for a value made from the environment, else ``""``."""
        names = self._variables.get(path)
        if not names:
            return ""
        return "(from " + ", ".join(f"${{{name}}}" for name in names) + ")"

    def has_problem_at(self, path: str) -> bool:
        return any(
            blocks and (path == p or path.startswith(p + ".") or path.startswith(p + "["))
            for p, _, blocks in self._entries
        )

    def quote(self, path: str, value: str) -> str:
        """``'value'``, or the variables it came from when it came from the environment."""
        if path in self.from_environment:
            return self.source_of(path) or "(value from the environment)"
        return repr(value)

    def __bool__(self) -> bool:
        return bool(self._entries)

    def lines(self) -> list[str]:
        return [f"{path or ROOT}: {message}" for path, message, _ in self._entries]
