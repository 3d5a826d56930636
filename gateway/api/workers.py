"""``server.workers > 1``: uvicorn's supervisor, except that SIGHUP reloads in place.

uvicorn's own supervisor answers SIGHUP by replacing every worker (new processes, new
connection pools, circuits and exploration counts lost). Here the supervisor passes the
signal on to each worker, which reloads the configuration file itself like a single
process does (gateway.api.reload); each worker also watches the file on its own. Each
worker ends with status 0 once its log lines are written when SIGTERM (which the
supervisor sends it on its own SIGTERM or SIGINT) has stopped its server
(gateway.api.serving.exit_cleanly_on_sigterm).
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import signal
from typing import Any

import uvicorn
from uvicorn.supervisors.multiprocess import Multiprocess

from gateway.api.serving import exit_cleanly_on_sigterm

log = logging.getLogger("gateway.reload")


class ReloadingSupervisor(Multiprocess):
    def handle_hup(self) -> None:
        log.info("SIGHUP: every worker reloads the configuration file")
        for process in self.processes:
            pid = process.pid
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGHUP)


class WorkerConfig(uvicorn.Config):
    """``uvicorn.Config`` whose ``configure_logging`` also installs, in a worker, the SIGTERM
    handler that writes out the worker's log lines before it ends. It is the one step of
    ours that uvicorn runs in a worker process (``uvicorn._subprocess.subprocess_started``)
    before that worker's server captures the signals and records the handler in force;
    the configuration travels pickled to each worker, so this module-level class goes too.
    The supervisor (no parent process of multiprocessing's) keeps uvicorn's handlers: it
    stops its workers and returns."""

    def configure_logging(self) -> None:
        super().configure_logging()
        if multiprocessing.parent_process() is not None:
            exit_cleanly_on_sigterm()


def run_workers(app: str, **options: Any) -> None:
    """What ``uvicorn.run(app, workers=N, ...)`` does, with the reloading supervisor."""
    config = WorkerConfig(app, **options)
    sock = config.bind_socket()
    ReloadingSupervisor(config, sockets=[sock]).run()
