"""The app factory uvicorn imports in each worker when ``server.workers > 1``."""

from __future__ import annotations

import logging
import os
import signal
from pathlib import Path

from litestar import Litestar

from gateway import allocator
from gateway.api.app import create_app
from gateway.config.errors import ConfigError
from gateway.config.loader import load_config_file

log = logging.getLogger("gateway")


def app_from_env() -> Litestar:
    allocator.limit_arenas()  # a worker is a new process: the cap is its own
    # A SIGHUP before the app's lifespan takes it over must not end the worker.
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    path = Path(os.environ["GATEWAY_CONFIG"])
    try:
        loaded = load_config_file(path)
    except ConfigError as error:  # the file changed since `gateway serve` checked it
        for problem in error.problems:
            log.error("%s: %s", path, problem)
        raise SystemExit(1) from None
    return create_app(loaded.config, config_file=path, digest=loaded.digest, settle_collector=True)
