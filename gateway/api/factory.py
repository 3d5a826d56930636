"""The app factory uvicorn imports in each worker when ``server.workers > 1``."""

from __future__ import annotations

import os

from litestar import Litestar

from gateway import allocator
from gateway.api.app import create_app
from gateway.config.loader import load_config


def app_from_env() -> Litestar:
    allocator.limit_arenas()  # a worker is a new process: the cap is its own
    config = load_config(os.environ["GATEWAY_CONFIG"])
    return create_app(config)
