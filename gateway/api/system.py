"""Liveness, readiness and Prometheus metrics."""

from __future__ import annotations

from typing import Any

from litestar import Request, get
from litestar.response import Response

from gateway.db.probe import database_ready
from gateway.runtime import Runtime


@get("/healthz", include_in_schema=False)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@get("/readyz", include_in_schema=False)
async def readyz(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
    runtime: Runtime = request.app.state.runtime
    if await database_ready(runtime.engine):
        return Response({"status": "ready"})
    return Response({"status": "unavailable", "down": ["database"]}, status_code=503)


@get("/metrics", include_in_schema=False)
async def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    runtime: Runtime = request.app.state.runtime
    body = runtime.metrics.render(runtime.refresh_gauges)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")
