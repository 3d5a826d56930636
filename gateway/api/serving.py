"""How the gateway is served: uvicorn's options (one source for ``gateway serve`` and the
tests, so the connection bounds hold in both), the process's open-file limit, and how a
SIGTERM ends a serving process."""

from __future__ import annotations

import functools
import logging
import os
import signal
import sys
import threading
from types import FrameType
from typing import Any

from gateway import logs
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


def exit_cleanly_on_sigterm() -> None:
    """Make SIGTERM end this process with status 0 once every line it logged is on stderr.

    Call it on the main thread just before uvicorn's server captures the signals (before
    ``uvicorn.run``; in a worker before its server runs). uvicorn records the handler in
    force as the original one, answers SIGTERM with its graceful shutdown (the drain,
    the lifespan's shutdown, "Finished server process"), puts the original handler back
    and raises the signal again into it. With the default handler the process then died
    of the signal: exit status -15, atexit never ran, and the lines still queued for the
    log writer thread (gateway.logs) were lost. This handler writes them out, flushes
    stdout and stderr and ends the process at once with status 0 (docs/operations.md,
    "Stopping and draining a replica"); nothing else runs after it, as with the signal.
    SIGINT is left alone: uvicorn re-raises it as KeyboardInterrupt, which exits
    normally. Off the main thread (an embedded server) there is nothing to install."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_after_sigterm)


def _exit_after_sigterm(sig: int, frame: FrameType | None) -> None:
    logs.drain()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # a closed or broken stream: nothing more to write there
            pass
    os._exit(0)
