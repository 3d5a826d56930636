"""``server.workers > 1``: uvicorn's supervisor, except that SIGHUP reloads in place.

uvicorn's own supervisor answers SIGHUP by replacing every worker (new processes, new
connection pools, circuits and exploration counts lost). Here the supervisor passes the
signal on to each worker, which reloads the configuration file itself like a single
process does (gateway.api.reload); each worker also watches the file on its own.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
from typing import Any

import uvicorn
from uvicorn.supervisors.multiprocess import Multiprocess

log = logging.getLogger("gateway.reload")


class ReloadingSupervisor(Multiprocess):
    def handle_hup(self) -> None:
        log.info("SIGHUP: every worker reloads the configuration file")
        for process in self.processes:
            pid = process.pid
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGHUP)


def run_workers(app: str, **options: Any) -> None:
    """What ``uvicorn.run(app, workers=N, ...)`` does, with the reloading supervisor."""
    config = uvicorn.Config(app, **options)
    sock = config.bind_socket()
    ReloadingSupervisor(config, sockets=[sock]).run()
