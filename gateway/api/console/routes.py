"""The console's pages under /admin/ and its JSON endpoints under /admin/api/ (docs/console.md).

Pages are HTML rendered here; the only forms that POST are sign-in and sign-out
(gateway.api.console.signing). The Keys page's writes are the console script's calls to
the admin API with the page's CSRF token (gateway.api.governance). Every page answers
with a CSP that admits the console's own stylesheet and script only
(gateway.api.console.answers).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from litestar import Request, get
from litestar.response import Redirect, Response

from gateway.api.console.access import Access, access_of
from gateway.api.console.answers import error_page, html_response
from gateway.api.console.data import (
    FILTER_NAMES,
    budgets_data,
    calls_data,
    filter_options,
    overview_data,
    providers_data,
)
from gateway.api.console.html import Frame
from gateway.api.console.params import call_id
from gateway.api.console.signing import SIGN_IN_HANDLERS
from gateway.api.console.views.budgets import budgets_page
from gateway.api.console.views.calls import calls_page
from gateway.api.console.views.decision import call_page
from gateway.api.console.views.keys import KEYS_PATH, TEAMS_PATH, keys_page, teams_page
from gateway.api.console.views.overview import overview_page
from gateway.api.console.views.providers import providers_page
from gateway.api.console.views.why import why_page
from gateway.domain.clock import utc_now
from gateway.domain.errors import AuthenticationFailed, GatewayError, NotFound
from gateway.pipeline.explain import explain_configuration
from gateway.runtime import Runtime
from gateway.telemetry.console import call_detail

_STATIC = {
    "console.css": "text/css",
    "console.js": "text/javascript",
    "icon.svg": "image/svg+xml",
}


def _runtime(request: Request[Any, Any, Any]) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _params(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {name: value for name, value in request.query_params.items() if isinstance(value, str)}


def _to_sign_in(request: Request[Any, Any, Any]) -> Redirect:
    target = request.url.path
    if request.url.query:
        target += f"?{request.url.query}"
    return Redirect(f"/admin/sign-in?{urlencode({'next': target})}", status_code=303)


def _frame(access: Access, active: str) -> Frame:
    return Frame(active, access.csrf if access.signed_in else None)


# Pages ----------------------------------------------------------------------------------


Render = Callable[[Runtime, dict[str, str], Frame], Awaitable[str]]


async def _page(
    request: Request[Any, Any, Any], active: str, render: Render
) -> Response[str] | Redirect:
    """A signed-in page: ``render`` builds it; a GatewayError it raises shows as an error page."""
    try:
        access = await access_of(request)
    except GatewayError as error:  # the session's sign-out could not be read
        return error_page(error, active)
    if not access.allowed:
        return _to_sign_in(request)
    frame = _frame(access, active)
    try:
        text = await render(_runtime(request), _params(request), frame)
    except GatewayError as error:
        return error_page(error, active, frame.csrf)
    return html_response(text)


async def _call_of(runtime: Runtime, path_id: int) -> dict[str, Any]:
    checked = call_id(path_id, "call_id")
    assert checked is not None  # the route matched an int
    found = await call_detail(runtime.engine, checked)
    if found is None:
        raise NotFound(f"No call {checked}.")
    template = runtime.config.telemetry.otel.trace_url
    trace = found.get("traceId")
    found["traceUrl"] = template.replace("{traceId}", trace) if template and trace else None
    return found


@get("/admin", include_in_schema=False)
async def overview(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    """``/admin/``; ``/admin`` (which routes here too) redirects there."""
    if not request.scope.get("raw_path", b"/").endswith(b"/"):
        query = request.scope.get("query_string", b"").decode("latin-1")
        return Redirect(f"/admin/?{query}" if query else "/admin/", status_code=308)

    async def render(runtime: Runtime, params: dict[str, str], frame: Frame) -> str:
        return overview_page(await overview_data(runtime, params, utc_now()), frame)

    return await _page(request, "overview", render)


@get("/admin/calls", include_in_schema=False)
async def calls(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    async def render(runtime: Runtime, params: dict[str, str], frame: Frame) -> str:
        data = await calls_data(runtime, params)
        query = {name: params[name] for name in FILTER_NAMES if params.get(name)}
        return calls_page(data, filter_options(runtime), query, frame)

    return await _page(request, "calls", render)


@get("/admin/calls/{call_id:int}", include_in_schema=False)
async def call(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    path_id: int = request.path_params["call_id"]

    async def render(runtime: Runtime, _params: dict[str, str], frame: Frame) -> str:
        return call_page(await _call_of(runtime, path_id), frame)

    return await _page(request, "calls", render)


@get("/admin/why", include_in_schema=False)
async def why(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    async def render(runtime: Runtime, params: dict[str, str], frame: Frame) -> str:
        readout: dict[str, Any] | None = None
        error: str | None = None
        configuration = params.get("configuration")
        if configuration:
            try:
                readout = explain_configuration(
                    runtime.config,
                    runtime.snapshots.snapshot(),
                    configuration,
                    params.get("operation") or "chat",
                    params.get("mode") or None,
                )
            except GatewayError as failure:
                error = failure.message
        return why_page(readout, filter_options(runtime), params, error, frame)

    return await _page(request, "why", render)


@get("/admin/providers", include_in_schema=False)
async def providers(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    async def render(runtime: Runtime, _params: dict[str, str], frame: Frame) -> str:
        return providers_page(await providers_data(runtime, utc_now()), frame)

    return await _page(request, "providers", render)


@get("/admin/budgets", include_in_schema=False)
async def budgets(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    async def render(runtime: Runtime, _params: dict[str, str], frame: Frame) -> str:
        return budgets_page(await budgets_data(runtime, utc_now()), frame)

    return await _page(request, "budgets", render)


@get(KEYS_PATH, include_in_schema=False)
async def keys(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    """The Keys page; its writes go through /admin/keys from the console's script."""

    async def render(runtime: Runtime, params: dict[str, str], frame: Frame) -> str:
        team = params.get("team") or None
        listed = runtime.admin.list_keys(team, utc_now())
        teams = sorted(t.id for t in runtime.directory.teams())
        options = filter_options(runtime)["configurations"]
        return keys_page(listed, teams, options, team, Frame(frame.active, frame.csrf, False))

    return await _page(request, "keys", render)


@get(TEAMS_PATH, include_in_schema=False)
async def teams(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    async def render(runtime: Runtime, _params: dict[str, str], frame: Frame) -> str:
        budgets = (await budgets_data(runtime, utc_now()))["budgets"]
        return teams_page(runtime.admin.list_teams(), budgets, frame)

    return await _page(request, "teams", render)


@get("/admin/static/{name:str}", include_in_schema=False)
async def static(request: Request[Any, Any, Any]) -> Response[bytes]:
    """The console's stylesheet and script: no data, so no sign-in."""
    name: str = request.path_params["name"]
    media_type = _STATIC.get(name)
    if media_type is None:
        raise NotFound(f"No console file '{name}'.")
    content = resources.files("gateway.api").joinpath("static", name).read_bytes()
    return Response(
        content,
        media_type=media_type,
        headers={"cache-control": "no-cache"},
    )


# JSON -----------------------------------------------------------------------------------


async def _require(request: Request[Any, Any, Any]) -> None:
    if not (await access_of(request)).allowed:
        raise AuthenticationFailed("Missing or invalid admin key or console session.")


@get("/admin/api/overview", include_in_schema=False)
async def api_overview(request: Request[Any, Any, Any]) -> dict[str, Any]:
    await _require(request)
    return await overview_data(_runtime(request), _params(request), utc_now())


@get("/admin/api/calls", include_in_schema=False)
async def api_calls(request: Request[Any, Any, Any]) -> dict[str, Any]:
    await _require(request)
    return await calls_data(_runtime(request), _params(request))


@get("/admin/api/calls/{call_id:int}", include_in_schema=False)
async def api_call(request: Request[Any, Any, Any]) -> dict[str, Any]:
    await _require(request)
    return await _call_of(_runtime(request), request.path_params["call_id"])


@get("/admin/api/providers", include_in_schema=False)
async def api_providers(request: Request[Any, Any, Any]) -> dict[str, Any]:
    await _require(request)
    return await providers_data(_runtime(request), utc_now())


@get("/admin/api/budgets", include_in_schema=False)
async def api_budgets(request: Request[Any, Any, Any]) -> dict[str, Any]:
    await _require(request)
    return await budgets_data(_runtime(request), utc_now())


CONSOLE_HANDLERS = [
    overview,
    calls,
    call,
    why,
    providers,
    budgets,
    keys,
    teams,
    static,
    *SIGN_IN_HANDLERS,
    api_overview,
    api_calls,
    api_call,
    api_providers,
    api_budgets,
]
