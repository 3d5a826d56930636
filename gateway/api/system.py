"""Liveness, readiness, Prometheus metrics, and the root that clients probe."""

from __future__ import annotations

import asyncio
from typing import Any

from litestar import Request, get, head
from litestar.response import Response

from gateway.api.drain import Drain
from gateway.db.probe import database_ready, redis_ready
from gateway.runtime import Runtime


@head("/", include_in_schema=False)
async def root_probe() -> None:
    """Claude Code probes ``HEAD /`` on its ``ANTHROPIC_BASE_URL`` before it starts."""


@get("/", include_in_schema=False)
async def root() -> dict[str, str]:
    return {"status": "ok"}


@get("/healthz", include_in_schema=False)
async def healthz() -> dict[str, str]:
    return {"status": "ok"}


@get("/readyz", include_in_schema=False)
async def readyz(request: Request[Any, Any, Any]) -> Response[dict[str, Any]]:
    runtime: Runtime = request.app.state.runtime
    drain: Drain = request.app.state.drain
    if drain.draining:  # SIGTERM: out of the rotation first (gateway.api.drain)
        return Response({"status": "draining"}, status_code=503)
    probes = [database_ready(runtime.engine)]
    if runtime.redis is not None:
        probes.append(redis_ready(runtime.redis))
    ready = await asyncio.gather(*probes)
    down = [name for name, up in zip(("database", "redis"), ready, strict=False) if not up]
    if not down:
        return Response({"status": "ready"})
    return Response({"status": "unavailable", "down": down}, status_code=503)


@get("/metrics", include_in_schema=False)
async def metrics(request: Request[Any, Any, Any]) -> Response[bytes]:
    runtime: Runtime = request.app.state.runtime
    body = runtime.metrics.render(runtime.refresh_gauges)
    return Response(body, media_type="text/plain; version=0.0.4; charset=utf-8")
