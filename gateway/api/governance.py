"""``/admin/keys``, ``/admin/teams`` and ``/admin/audit`` (docs/api.md, "Keys and teams").

Reads: the admin key as ``Authorization: Bearer``, or a console session. Writes: the admin
key, or a console session with its CSRF token in ``X-CSRF-Token`` from the same origin.
Errors are OpenAI envelopes (gateway.api.errors).
"""

from __future__ import annotations

import json
from typing import Any

from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.connection import ASGIConnection
from litestar.handlers.base import BaseRouteHandler
from litestar.params import FromPath

from gateway.api.admin import _int_param
from gateway.api.console.access import access_of
from gateway.domain.clock import utc_now
from gateway.domain.errors import AuthenticationFailed, CrossSiteRequest
from gateway.governance.documents import KeyBody, RotateBody, TeamBody, parse_body, sent_fields
from gateway.runtime import Runtime
from gateway.session import same_origin

CSRF_HEADER = "x-csrf-token"
AnyRequest = Request[Any, Any, Any]


async def _read_guard(connection: ASGIConnection[Any, Any, Any, Any], _: BaseRouteHandler) -> None:
    if not (await access_of(connection)).allowed:
        raise AuthenticationFailed("Missing or invalid admin key.")


async def actor_of(request: Request[Any, Any, Any]) -> str:
    """Who writes: ``admin-key``, ``session:<id>`` (CSRF checked) or ``keyless``."""
    access = await access_of(request)
    if not access.allowed:
        raise AuthenticationFailed("Missing or invalid admin key.")
    if access.session is None:
        runtime: Runtime = request.app.state.runtime
        admin = runtime.serving.keys.is_admin(request.headers.get("authorization"))
        return "admin-key" if admin else "keyless"
    scheme = request.scope.get("scheme", "http")
    if not same_origin(request.headers.get("origin"), request.headers.get("host"), scheme):
        raise CrossSiteRequest("Refused: the request came from another site.")
    if request.headers.get(CSRF_HEADER) != access.csrf:
        raise CrossSiteRequest(f"A console write needs its CSRF token in {CSRF_HEADER}.")
    return f"session:{access.session.nonce}"


def _runtime(request: Request[Any, Any, Any]) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


class GovernanceController(Controller):
    path = "/admin"
    guards = [_read_guard]  # noqa: RUF012 - Litestar reads this class attribute

    @post("/keys", status_code=201)
    async def create_key(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        actor = await actor_of(request)
        body = parse_body(await request.body(), KeyBody)
        key, view = await _runtime(request).admin.create_key(body, actor, utc_now())
        return {**view, "key": key}

    @get("/keys")
    async def list_keys(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        team = request.query_params.get("team")
        data = _runtime(request).admin.list_keys(team, utc_now())
        return {"object": "list", "data": data}

    @get("/keys/{key_id:str}")
    async def show_key(self, request: AnyRequest, key_id: FromPath[str]) -> dict[str, Any]:
        return _runtime(request).admin.show_key(key_id, utc_now())

    @patch("/keys/{key_id:str}")
    async def patch_key(self, request: AnyRequest, key_id: FromPath[str]) -> dict[str, Any]:
        actor = await actor_of(request)
        raw = await request.body()
        body = parse_body(raw, KeyBody)
        return await _runtime(request).admin.patch_key(
            key_id, body, sent_fields(raw), actor, utc_now()
        )

    @post("/keys/{key_id:str}/rotate", status_code=200)
    async def rotate_key(self, request: AnyRequest, key_id: FromPath[str]) -> dict[str, Any]:
        actor = await actor_of(request)
        body = parse_body(await request.body(), RotateBody)
        key, view = await _runtime(request).admin.rotate_key(key_id, body, actor, utc_now())
        return {**view, "key": key}

    @delete("/keys/{key_id:str}", status_code=200)
    async def revoke_key(self, request: AnyRequest, key_id: FromPath[str]) -> dict[str, Any]:
        actor = await actor_of(request)
        return await _runtime(request).admin.revoke_key(key_id, actor, utc_now())

    @post("/teams", status_code=201)
    async def create_team(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        actor = await actor_of(request)
        body = parse_body(await request.body(), TeamBody)
        return await _runtime(request).admin.create_team(body, actor, utc_now())

    @get("/teams")
    async def list_teams(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        return {"object": "list", "data": _runtime(request).admin.list_teams()}

    @get("/teams/{team_id:str}")
    async def show_team(self, request: AnyRequest, team_id: FromPath[str]) -> dict[str, Any]:
        return _runtime(request).admin.show_team(team_id)

    @patch("/teams/{team_id:str}")
    async def patch_team(self, request: AnyRequest, team_id: FromPath[str]) -> dict[str, Any]:
        actor = await actor_of(request)
        raw = await request.body()
        body = parse_body(raw, TeamBody)
        return await _runtime(request).admin.patch_team(
            team_id, body, sent_fields(raw), actor, utc_now()
        )

    @delete("/teams/{team_id:str}", status_code=200)
    async def delete_team(self, request: AnyRequest, team_id: FromPath[str]) -> Response[Any]:
        actor = await actor_of(request)
        await _runtime(request).admin.delete_team(team_id, actor, utc_now())
        return Response({"id": team_id, "object": "gateway.team", "deleted": True})

    @get("/audit")
    async def audit(self, request: Request[Any, Any, Any]) -> dict[str, Any]:
        params = request.query_params
        limit = _int_param(params.get("limit"), "limit", 50, 1, 500)
        before = params.get("before")
        before_id = _int_param(before, "before", 0, 1, 2**62) if before else None
        rows = await _runtime(request).directory.store.audit(limit, before_id)
        data = [
            {
                "id": row["id"],
                "time": row["created_at"].isoformat().replace("+00:00", "Z"),
                "actor": row["actor"],
                "action": row["action"],
                "target": row["target"],
                "changes": _json(row["changes"]),
            }
            for row in rows
        ]
        more = len(data) == limit
        return {
            "object": "list",
            "data": data,
            "hasMore": more,
            "nextBefore": data[-1]["id"] if more else None,
        }


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {}
