"""What a reload may change in a running process (pure; docs/operations.md, "Reloading
the configuration").

Most of the file is taken on the next call. A few sections are bound to what the process
opened at start (its listening socket, database engine, telemetry writer, cache store):
a reload keeps them as they were and says so. Some files are refused outright: those that
would open the gateway wider than the process was started for, and those that would leave
it serving nothing (no provider, no configuration, no key while keys were in use), which
is what a file caught half-written looks like.
"""

from __future__ import annotations

import dataclasses

from gateway.domain.settings import AuthSettings, GatewayConfig

# Top-level sections a running process keeps from its start (YAML name, attribute).
RESTART_ONLY = (
    ("server", "server"),
    ("database", "database"),
    ("telemetry", "telemetry"),
    ("cache", "cache"),
    ("budgets", "budgets"),
    ("rateLimits", "rate_limits"),
    ("redis", "redis"),
)


def refusals(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """Problems that make the new file unusable by this process, as ``path: why`` lines."""
    problems = []
    if not new.providers:
        problems.append("providers: no provider is configured: every call would fail")
    if not new.configurations:
        problems.append("configurations: no configuration is configured: every call would be a 404")
    if _keyless(new.auth) != _keyless(old.auth):
        problems.append(
            "auth: switching between keys and allowUnauthenticated needs a restart "
            "(keyless mode binds 127.0.0.1 and guards requests from its start)"
        )
    elif not new.auth.keys and not new.auth.allow_unauthenticated:
        problems.append("auth.keys: no gateway key is configured: every call would be refused")
    return problems


def restart_only_changes(old: GatewayConfig, new: GatewayConfig) -> list[str]:
    """The restart-only sections the new file changes: kept as they were until a restart."""
    return [
        name
        for name, attribute in RESTART_ONLY
        if getattr(old, attribute) != getattr(new, attribute)
    ]


def as_reloaded(old: GatewayConfig, new: GatewayConfig) -> GatewayConfig:
    """``new`` with the restart-only sections the process started with."""
    kept = {attribute: getattr(old, attribute) for _, attribute in RESTART_ONLY}
    return dataclasses.replace(new, **kept)


def _keyless(auth: AuthSettings) -> bool:
    """As gateway.auth.is_keyless: no key, and allowUnauthenticated allows that."""
    return auth.allow_unauthenticated and not auth.keys
