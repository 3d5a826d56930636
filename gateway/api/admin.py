"""The admin API: the routing readout ("Why this model?") and recent routed calls."""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from litestar import Controller, Request, get
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.response import Redirect, Response

from gateway.domain.errors import AuthenticationFailed, InvalidRequest
from gateway.pipeline.explain import explain_configuration
from gateway.runtime import Runtime
from gateway.telemetry.queries import recent_routed_calls


def admin_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    serving = connection.app.state.runtime.serving
    if serving.keys.open and serving.config.auth.admin_key_hash is None:
        return  # allowUnauthenticated on loopback with no admin key configured
    if not serving.keys.is_admin(connection.headers.get("authorization")):
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
        calls = await recent_routed_calls(runtime.engine, days, limit, datetime.now(UTC))
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


@dataclass(frozen=True, slots=True)
class _Page:
    html: bytes
    headers: dict[str, str]


def _inline_hashes(html: bytes, tag: bytes) -> str:
    """CSP sources admitting exactly the page's inline ``tag`` blocks, by their digest."""
    blocks = re.findall(rb"<" + tag + rb">(.*?)</" + tag + rb">", html, re.DOTALL)
    digests = (base64.b64encode(hashlib.sha256(block).digest()).decode() for block in blocks)
    return " ".join(f"'sha256-{digest}'" for digest in digests) or "'none'"


@functools.cache
def _governance_page() -> _Page:
    html = resources.files("gateway.api").joinpath("static/governance.html").read_bytes()
    policy = (
        "default-src 'self'; "
        f"script-src {_inline_hashes(html, b'script')}; "
        f"style-src {_inline_hashes(html, b'style')}; "
        "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )
    # x-content-type-options comes with every answer (the server's default headers).
    headers = {
        "content-security-policy": policy,
        "x-frame-options": "DENY",
        "referrer-policy": "no-referrer",
    }
    return _Page(html, headers)


@get("/admin", include_in_schema=False)
async def governance_page(request: Request[Any, Any, Any]) -> Response[bytes] | Redirect:
    """The page holds no data: it asks for the admin key and reads the admin API.

    Served at ``/admin/``; ``/admin`` (which routes here too) redirects there, so the
    address shows where the page lives.
    """
    if not request.scope.get("raw_path", b"/").endswith(b"/"):
        query = request.scope.get("query_string", b"").decode("latin-1")
        return Redirect(f"/admin/?{query}" if query else "/admin/", status_code=308)
    page = _governance_page()
    # Litestar adds the charset.
    return Response(page.html, media_type="text/html", headers=page.headers)
