"""What a reload may change: refused changes, restart-only sections kept as started."""

from __future__ import annotations

from gateway.config.changes import as_reloaded, refusals, restart_only_changes

from .support import load, with_minimal

KEYS = """
auth: {keys: [{id: a, key: sk-aaaaaaaaaaaaaaaa}]}
configurations: [{id: c, mode: fixed, model: m1}]
"""
CONFIGURATION = "configurations: [{id: c, mode: fixed, model: m1}]\n"


def test_a_change_of_routing_or_configurations_is_taken_whole() -> None:
    old = load(with_minimal(KEYS))
    new = load(
        with_minimal(KEYS.replace("fixed, model: m1", "criteria") + "routing: {callHistory: true}")
    )
    assert refusals(old, new) == [] and restart_only_changes(old, new) == []
    taken = as_reloaded(old, new)
    assert taken.routing.call_history is True and taken.configurations["c"].is_fixed is False


def test_restart_only_sections_are_named_and_kept_as_started() -> None:
    old = load(with_minimal(KEYS))
    new = load(
        with_minimal(
            KEYS
            + "server: {port: 4100, maxBodyBytes: 1000}\n"
            + 'database: {url: "sqlite+aiosqlite:///other.db"}\n'
            + "telemetry: {enabled: false}\n"
            + "health: {windowSeconds: 60}\n"
        )
    )
    assert restart_only_changes(old, new) == ["server", "database", "telemetry"]
    taken = as_reloaded(old, new)
    assert (taken.server, taken.database, taken.telemetry) == (
        old.server,
        old.database,
        old.telemetry,
    )
    assert taken.health.window_seconds == 60  # not restart-only: taken
    assert taken.model("m1") == new.model("m1")


def test_going_keyless_or_keyed_or_keyless_without_permission_is_refused() -> None:
    keyed = load(with_minimal(KEYS))
    keyless = load(with_minimal(CONFIGURATION + "auth: {allowUnauthenticated: true}\n"))
    no_keys = load(with_minimal(CONFIGURATION + "auth: {keys: []}\n"))
    (going_open,) = refusals(keyed, keyless)
    assert going_open.startswith(
        "auth: switching between keys and allowUnauthenticated needs a restart"
    )
    assert len(refusals(keyless, keyed)) == 1
    assert refusals(keyed, no_keys) == [
        "auth.keys: no gateway key is configured: every call would be refused"
    ]
    assert refusals(keyless, keyless) == []


def test_a_file_that_would_serve_nothing_is_refused() -> None:
    """What a file caught half-written looks like: a valid prefix with no provider, no
    configuration, or no key left while the process was serving keys."""
    old = load(with_minimal(KEYS))
    no_configuration = load(with_minimal("auth: {keys: [{id: a, key: sk-aaaaaaaaaaaaaaaa}]}\n"))
    no_provider = load("auth: {keys: [{id: a, key: sk-aaaaaaaaaaaaaaaa}]}\n")
    no_key = load(with_minimal(CONFIGURATION))
    assert refusals(old, no_configuration) == [
        "configurations: no configuration is configured: every call would be a 404"
    ]
    assert refusals(old, no_provider) == [
        "providers: no provider is configured: every call would fail",
        "configurations: no configuration is configured: every call would be a 404",
    ]
    assert refusals(old, no_key) == [
        "auth.keys: no gateway key is configured: every call would be refused"
    ]
    assert refusals(old, old) == []
