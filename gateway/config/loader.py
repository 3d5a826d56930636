"""Load the gateway's YAML configuration: text -> tree -> ${ENV} -> schema -> GatewayConfig.

Two phases, as TensorZero does: parse into the schema with unknown keys
denied (``convert``), then resolve and validate references (``build``).
Every problem of every phase is collected and raised together in one
:class:`ConfigError`; phase 2 runs even when phase 1 found problems (entries
that failed are skipped), so one run shows all there is to fix.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gateway.config.build import build
from gateway.config.convert import to_struct, yaml_type
from gateway.config.env import interpolate, shield
from gateway.config.errors import ConfigError, Problems
from gateway.config.schema import FileSchema
from gateway.config.yaml_text import SYNTAX_ERROR, parse_yaml
from gateway.domain.settings import GatewayConfig


@dataclass(frozen=True, slots=True)
class LoadedFile:
    config: GatewayConfig
    digest: str  # "sha256:" + the hex SHA-256 of the file's bytes, as read


def load_config(path: str | Path, environ: Mapping[str, str] | None = None) -> GatewayConfig:
    """The configuration in the file at ``path``; ConfigError listing every problem."""
    return load_config_file(path, environ).config


def load_config_file(path: str | Path, environ: Mapping[str, str] | None = None) -> LoadedFile:
    """The configuration in the file at ``path`` and the digest of the bytes it came from
    (read once, so the two always match); ConfigError listing every problem."""
    source = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise ConfigError([f"cannot read the file: {reason}"]) from exc
    return load_config_bytes(raw, environ, source=source)


def load_config_bytes(
    raw: bytes, environ: Mapping[str, str] | None = None, source: str = "<bytes>"
) -> LoadedFile:
    """The configuration in ``raw`` (a file's bytes, already read) and their digest."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([f"cannot read the file: {type(exc).__name__}"]) from exc
    return LoadedFile(load_config_text(text, environ, source=source), file_digest(raw))


def file_digest(raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(raw).hexdigest()


def load_config_text(
    text: str, environ: Mapping[str, str] | None = None, source: str = "<string>"
) -> GatewayConfig:
    """The configuration in ``text``; ``environ`` defaults to ``os.environ``. No problem
    names ``source``: whoever prints them names the file, once."""
    problems = Problems()
    config = _load(text, os.environ if environ is None else environ, problems)
    if config is None or problems:
        raise ConfigError(problems.lines())
    return config


def check_config(path: str | Path, environ: Mapping[str, str] | None = None) -> list[str]:
    """Every problem in the file at ``path``; empty when it loads."""
    try:
        load_config(path, environ)
    except ConfigError as exc:
        return exc.problems
    return []


def _load(text: str, environ: Mapping[str, str], problems: Problems) -> GatewayConfig | None:
    tree = parse_yaml(shield(text), problems)
    if tree is SYNTAX_ERROR:
        return None
    if not isinstance(tree, dict):
        problems.add("", f"expected a mapping at the top level, got {yaml_type(tree)}")
        return None
    # A section left empty (``auth:`` above comments only) reads as null: it means "the
    # defaults", as if it were left out.
    tree = {key: value for key, value in tree.items() if value is not None}
    tree = interpolate(tree, environ, problems)
    file = to_struct(tree, FileSchema, problems)
    if file is None:
        return None
    return build(file, tree, problems)
