"""The ``server`` keys that bound what a client may hold open or send before a request runs."""

from __future__ import annotations

from .support import MINIMAL, load, problems_of, with_minimal


def test_connection_limits_take_their_defaults() -> None:
    server = load(MINIMAL).server

    assert server.max_header_bytes == 65536
    assert server.header_timeout_seconds == 10
    assert server.idle_timeout_seconds == 75
    assert server.max_connections == 2048


def test_connection_limits_are_read_from_camel_case_keys() -> None:
    server = load(
        with_minimal(
            "server: {maxHeaderBytes: 8192, headerTimeoutSeconds: 2.5, idleTimeoutSeconds: 30,"
            " maxConnections: 10}"
        )
    ).server

    assert (server.max_header_bytes, server.header_timeout_seconds) == (8192, 2.5)
    assert (server.idle_timeout_seconds, server.max_connections) == (30, 10)


def test_connection_limits_are_bounded() -> None:
    problems = problems_of(
        with_minimal(
            "server: {maxHeaderBytes: 100, headerTimeoutSeconds: 0, idleTimeoutSeconds: -1,"
            " maxConnections: 0}"
        )
    )

    assert problems == [
        "server.maxHeaderBytes: must be >= 1024",
        "server.headerTimeoutSeconds: must be > 0",
        "server.idleTimeoutSeconds: must be > 0",
        "server.maxConnections: must be > 0",
    ]


def test_the_upstream_pool_is_as_large_as_max_connections_unless_set() -> None:
    assert load(with_minimal("server: {maxConnections: 10}")).server.max_upstream_connections == 10
    server = load(with_minimal("server: {maxConnections: 10, maxUpstreamConnections: 3}")).server
    assert server.max_upstream_connections == 3
    assert problems_of(with_minimal("server: {maxUpstreamConnections: 0}")) == [
        "server.maxUpstreamConnections: must be > 0"
    ]
