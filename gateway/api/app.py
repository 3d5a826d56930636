"""``create_app(config) -> Litestar``: shared resources built in the lifespan."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import msgspec
from litestar import Litestar
from litestar.exceptions import HTTPException
from litestar.types import ASGIApp, Message, Receive, Scope, Send

from gateway import allocator
from gateway.api.admin import AdminController
from gateway.api.console.routes import CONSOLE_HANDLERS
from gateway.api.console.throttle import SignInThrottle
from gateway.api.drain import Drain
from gateway.api.drain import install as install_drain
from gateway.api.errors import EXCEPTION_HANDLERS, from_http_exception
from gateway.api.governance import GovernanceController
from gateway.api.keyless import keyless_guard
from gateway.api.messages_errors import anthropic_errors
from gateway.api.models import list_models
from gateway.api.proxy import PROXY_HANDLERS, RAW_HANDLERS, request_id_of
from gateway.api.reload import ConfigWatcher
from gateway.api.system import healthz, metrics, readyz, root, root_probe
from gateway.auth import is_keyless
from gateway.domain.errors import GatewayError, as_gateway_error
from gateway.domain.settings import GatewayConfig
from gateway.runtime import Runtime
from gateway.upstream.http import Transport
from gateway.usage.tokens import TokenCounter

log = logging.getLogger(__name__)
_ENCODER = msgspec.json.Encoder()


class GatewayApp(Litestar):
    """Litestar, with the proxied endpoints (``/v1/chat/completions``, ``/v1/embeddings``,
    ``/v1/completions``) dispatched by exact path before its router and middleware stack.

    Those handlers are raw ASGI already; what the framework adds around them (exception
    middleware, router, send wrapper) cost about a tenth of a call's CPU under load
    (docs/performance.md). Every other path, and these with a trailing slash, go through
    Litestar as before. An exception past the handler answers as Litestar's exception
    handlers would (tests/unit/api/test_fast_paths.py compares the two routes).
    """

    fast_paths: dict[str, ASGIApp]
    # A serving process (``gateway serve``, each worker) settles the cycle collector once
    # its lifespan has started (gateway.allocator.settle_collector); tests' apps leave it.
    settles_collector: bool = False

    @staticmethod
    def _get_default_plugins(plugins: list[Any]) -> list[Any]:
        """msgspec's only: Litestar adds its pydantic plugins whenever pydantic is importable
        (about 7 MB resident), and nothing here uses pydantic."""
        from litestar.plugins.core import MsgspecDIPlugin

        return [*plugins, MsgspecDIPlugin()]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            handler = self.fast_paths.get(scope["path"])
            if handler is not None:
                scope["app"] = scope["litestar_app"] = self  # as Litestar.__call__ sets them
                scope.setdefault("state", {})
                await _answering_failures(handler, scope, receive, send)
                return
            if scope["path"] in MODEL_LISTS:
                await self._list_models(scope, receive, send)
                return
        await super().__call__(scope, receive, send)

    async def _list_models(self, scope: Scope, receive: Receive, send: Send) -> None:
        """``/v1/models``: every answer (errors included) carries ``x-request-id`` as the
        proxied paths' do; with ``anthropic-version`` (the anthropic SDK's
        client.models.list()) its errors are in Anthropic's envelope, naming that id."""
        request_id = request_id_of(scope).encode()
        router = super().__call__

        async def listing(scope: Scope, receive: Receive, send: Send) -> None:
            await router(scope, receive, _with_request_id(send, request_id))

        if _asks_anthropic(scope):
            app = anthropic_errors(listing)
            await app(scope, receive, _with_request_id(send, request_id))
            return
        await listing(scope, receive, send)


MODEL_LISTS = frozenset({"/v1/models", "/v1/models/"})


def _with_request_id(send: Send, request_id: bytes) -> Send:
    """``send``, adding ``x-request-id`` to an answer's headers that has none."""

    async def sending(message: Message) -> None:
        event: dict[str, Any] = message  # type: ignore[assignment]
        if event["type"] == "http.response.start":
            headers = list(event.get("headers", ()))
            if not any(name.lower() == b"x-request-id" for name, _ in headers):
                headers.append((b"x-request-id", request_id))
                event["headers"] = headers
        await send(message)

    return sending


def _asks_anthropic(scope: Scope) -> bool:
    return any(name == b"anthropic-version" for name, _ in scope.get("headers", ()))


async def _answering_failures(app: ASGIApp, scope: Scope, receive: Receive, send: Send) -> None:
    """What Litestar's exception handlers (gateway.api.errors) do on the router's route: an
    error of the tree answers its own status, envelope and headers; anything else is a bug
    of ours, a 500 envelope (its type logged, never its message: it can carry request
    data)."""
    try:
        await app(scope, receive, send)
    except Exception as exc:
        if isinstance(exc, HTTPException):
            error = from_http_exception(exc)
        else:
            if not isinstance(exc, GatewayError):
                log.error("unhandled %s on %s", type(exc).__name__, scope["path"])
            error = as_gateway_error(exc)
        body = _ENCODER.encode(error.envelope())
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ]
        headers.extend((k.encode(), v.encode("latin-1")) for k, v in error.headers().items())
        try:
            start = {"type": "http.response.start", "status": error.http_status, "headers": headers}
            await send(start)  # type: ignore[arg-type]
        except Exception:
            raise exc from None  # the answer had started: the server ends the connection
        await send({"type": "http.response.body", "body": body, "more_body": False})


def create_app(
    config: GatewayConfig,
    *,
    transport: Transport | None = None,
    counter: TokenCounter | None = None,
    config_file: Path | None = None,
    digest: str | None = None,
    settle_collector: bool = False,
) -> Litestar:
    """``config_file``: where ``config`` was read from (its bytes' ``digest``); the process
    then reloads it on SIGHUP and when it changes (gateway.api.reload). ``settle_collector``:
    this app is the process's (``gateway serve``): the cycle collector is settled once
    it has started (gateway.allocator)."""

    @asynccontextmanager
    async def lifespan(app: Litestar) -> AsyncIterator[None]:
        runtime = Runtime(config, transport=transport, counter=counter, digest=digest)
        app.state.runtime = runtime
        app.state.drain = drain = Drain()
        await runtime.start()
        undrain = install_drain(drain, config.server.shutdown_drain_seconds)
        watcher = ConfigWatcher(runtime, config_file) if config_file is not None else None
        if watcher is not None:
            await watcher.start()
        if isinstance(app, GatewayApp) and app.settles_collector:
            allocator.settle_collector()
        try:
            yield
        finally:
            undrain()
            if watcher is not None:
                await watcher.stop()
            await runtime.stop()

    keyless = is_keyless(config.auth)
    app = GatewayApp(
        route_handlers=[
            *PROXY_HANDLERS,
            list_models,
            root,
            root_probe,
            healthz,
            readyz,
            metrics,
            AdminController,
            GovernanceController,
            *CONSOLE_HANDLERS,
        ],
        lifespan=[lifespan],
        middleware=[keyless_guard] if keyless else [],
        exception_handlers=EXCEPTION_HANDLERS,
        # Logging is the process's (gateway.logs): Litestar's own config would replace the
        # root handler with its format in every worker.
        logging_config=None,
        openapi_config=None,
        debug=False,
    )
    app.settles_collector = settle_collector
    app.fast_paths = {
        path: keyless_guard(handler) if keyless else handler
        for path, handler in RAW_HANDLERS.items()
    }
    # Failed console sign-ins per client address, this process's (api.console.throttle).
    app.state.console_throttle = SignInThrottle()
    return app
