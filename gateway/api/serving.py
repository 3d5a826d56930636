"""How the gateway is served: uvicorn's options (one source for ``gateway serve`` and the
tests, so the connection bounds hold in both) and the process's open-file limit."""

from __future__ import annotations

import functools
import logging
from typing import Any

from gateway.api.connection import EdgeLimits, EdgeProtocol
from gateway.domain.settings import ServerSettings

log = logging.getLogger(__name__)

OPEN_FILES_CEILING = 1 << 20  # more than any one process needs
# Beyond its client connections a process holds upstream connections (about one per call),
# database connections, and its own files.
_FILES_PER_CONNECTION = 2
_FILES_RESERVED = 128


def uvicorn_options(server: ServerSettings) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.Config`` / ``uvicorn.run`` that bound connections."""
    return {
        # A partial of a module-level class pickles, so ``workers > 1`` gets it too.
        "http": functools.partial(EdgeProtocol, limits=EdgeLimits.from_settings(server)),
        "ws": "none",  # the gateway serves no WebSocket
        # On every answer: a browser must never read a JSON error or a stream as HTML.
        "headers": [("x-content-type-options", "nosniff")],
        # After SIGTERM (and the drain, gateway.api.drain): running calls' time to end.
        "timeout_graceful_shutdown": server.shutdown_grace_seconds,
    }


def target_open_files(soft: int, hard: int, unlimited: int) -> int:
    """The soft limit to ask for: the hard limit (at most the ceiling), never lower than now."""
    if soft == unlimited:
        return soft
    ceiling = OPEN_FILES_CEILING if hard == unlimited else min(hard, OPEN_FILES_CEILING)
    return max(soft, ceiling)


def raise_open_file_limit() -> tuple[int, int] | None:
    """Raise the soft RLIMIT_NOFILE as far as the hard limit allows; the (soft, hard) in force.

    Each client connection is a file descriptor; the common default soft limit of 1024
    lets a few hundred idle sockets starve every other client.
    """
    try:
        import resource
    except ImportError:  # pragma: no cover - not a POSIX system
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = target_open_files(soft, hard, resource.RLIM_INFINITY)
    if wanted != soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, wanted, exc)
    return resource.getrlimit(resource.RLIMIT_NOFILE)


def log_open_file_limit(limits: tuple[int, int] | None, server: ServerSettings) -> None:
    if limits is None:
        return
    soft, hard = limits
    log.info("open-file limit: %d (hard limit %d)", soft, hard)
    needed = server.max_connections * _FILES_PER_CONNECTION + _FILES_RESERVED
    if soft < needed:
        log.warning(
            "the open-file limit (%d) is below what server.maxConnections %d may need (%d): "
            "raise the hard limit (ulimit -Hn, LimitNOFILE=) or lower server.maxConnections",
            soft,
            server.max_connections,
            needed,
        )
