"""``create_app(config) -> Litestar``: shared resources built in the lifespan."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from litestar import Litestar

from gateway.api.admin import AdminController
from gateway.api.console.access import build_signer
from gateway.api.console.routes import CONSOLE_HANDLERS
from gateway.api.errors import EXCEPTION_HANDLERS
from gateway.api.keyless import keyless_guard
from gateway.api.models import list_models
from gateway.api.proxy import PROXY_HANDLERS
from gateway.api.reload import ConfigWatcher
from gateway.api.system import healthz, metrics, readyz
from gateway.auth import is_keyless
from gateway.domain.settings import GatewayConfig
from gateway.runtime import Runtime
from gateway.upstream.http import Transport
from gateway.usage.tokens import TokenCounter


def create_app(
    config: GatewayConfig,
    *,
    transport: Transport | None = None,
    counter: TokenCounter | None = None,
    config_file: Path | None = None,
    digest: str | None = None,
) -> Litestar:
    """``config_file``: where ``config`` was read from (its bytes' ``digest``); the process
    then reloads it on SIGHUP and when it changes (gateway.api.reload)."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        runtime = Runtime(config, transport=transport, counter=counter, digest=digest)
        app.state.runtime = runtime
        await runtime.start()
        watcher = ConfigWatcher(runtime, config_file) if config_file is not None else None
        if watcher is not None:
            await watcher.start()
        try:
            yield
        finally:
            if watcher is not None:
                await watcher.stop()
            await runtime.stop()

    app = Litestar(
        route_handlers=[
            *PROXY_HANDLERS,
            list_models,
            healthz,
            readyz,
            metrics,
            AdminController,
            *CONSOLE_HANDLERS,
        ],
        lifespan=[lifespan],
        middleware=[keyless_guard] if is_keyless(config.auth) else [],
        exception_handlers=EXCEPTION_HANDLERS,
        # Logging is the process's (gateway.logs): Litestar's own config would replace the
        # root handler with its format in every worker.
        logging_config=None,
        openapi_config=None,
        debug=False,
    )
    app.state.console_signer = build_signer(
        config.auth.admin_key_hash, config.auth.console_session_hours
    )
    return app
