"""The admin API: the routing readout ("Why this model?") and recent routed calls.

The console's pages and its own JSON endpoints are in gateway.api.console."""

from __future__ import annotations

import os
from typing import Any

from litestar import Controller, Request, get
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler

from gateway.api.console.access import access_of
from gateway.domain.clock import utc_now
from gateway.domain.errors import AuthenticationFailed, InvalidRequest
from gateway.pipeline.explain import explain_configuration
from gateway.runtime import Runtime
from gateway.telemetry.queries import recent_routed_calls


async def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    """The admin key, a console session, or keyless mode without an admin key."""
    if not (await access_of(connection)).allowed:
        raise AuthenticationFailed("Missing or invalid admin key.")


def _int_param(value: str | None, name: str, default: int, low: int, high: int) -> int:
    if value is None:
        return default
    try:
        number = int(value)
    except ValueError:
        raise InvalidRequest(f"'{name}' must be an integer.", param=name) from None
    if not low <= number <= high:
        raise InvalidRequest(f"'{name}' must be between {low} and {high}.", param=name)
    return number


class AdminController(Controller):
    path = "/admin"
    guards = [admin_guard]  # noqa: RUF012 - Litestar reads this class attribute

    @get("/routing/explain")
    async def routing_explain(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        params = request.query_params
        configuration = params.get("configuration")
        operation = params.get("operation")
        if not configuration:
            raise InvalidRequest("'configuration' is required.", param="configuration")
        if not operation:
            raise InvalidRequest("'operation' is required.", param="operation")
        runtime: Runtime = request.app.state.runtime
        serving = runtime.serving
        return explain_configuration(
            serving.config,
            serving.snapshots.snapshot(),
            configuration,
            operation,
            params.get("mode"),
        )

    @get("/routing/calls")
    async def routing_calls(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        params = request.query_params
        days = _int_param(params.get("days"), "days", 7, 1, 3650)
        limit = _int_param(params.get("limit"), "limit", 20, 1, 1000)
        runtime: Runtime = request.app.state.runtime
        calls = await recent_routed_calls(runtime.engine, days, limit, utc_now())
        return {"calls": calls}

    @get("/config/version")
    async def config_version(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        """Which configuration this process serves (docs/operations.md, "Reloading")."""
        runtime: Runtime = request.app.state.runtime
        version = runtime.version
        return {
            "hash": version.digest,
            "loadedAt": version.loaded_at.isoformat().replace("+00:00", "Z"),
            "generation": version.generation,
            "pid": os.getpid(),
        }
