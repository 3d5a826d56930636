"""The console's pages under /admin/ and its JSON endpoints under /admin/api/ (docs/console.md).

Pages are HTML rendered here, read-only; the only forms that POST are sign-in and
sign-out, each checked for its Origin and a CSRF token. Every page answers with
a CSP that admits the console's own stylesheet and script only.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Awaitable, Callable
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlencode

from litestar import Request, get, post
from litestar.datastructures import Cookie
from litestar.response import Redirect, Response

from gateway.api.console.access import (
    COOKIE_PATH,
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    Access,
    access_of,
    is_https,
    signer_of,
)
from gateway.api.console.data import (
    FILTER_NAMES,
    budgets_data,
    calls_data,
    filter_options,
    overview_data,
    providers_data,
)
from gateway.api.console.html import Frame, esc, page
from gateway.api.console.params import call_id
from gateway.api.console.views.budgets import budgets_page
from gateway.api.console.views.calls import calls_page
from gateway.api.console.views.decision import call_page
from gateway.api.console.views.overview import overview_page
from gateway.api.console.views.providers import providers_page
from gateway.api.console.views.sign_in import sign_in_page
from gateway.api.console.views.why import why_page
from gateway.domain.clock import utc_now
from gateway.domain.errors import AuthenticationFailed, GatewayError, InvalidRequest, NotFound
from gateway.pipeline.explain import explain_configuration
from gateway.runtime import Runtime
from gateway.session import same_origin
from gateway.telemetry.console import call_detail

POLICY = (
    "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
PAGE_HEADERS = {
    "content-security-policy": POLICY,
    "x-frame-options": "DENY",
    # Not no-referrer: with it Chrome sends "Origin: null" on the page's own form posts,
    # and the Origin check refuses them. Other sites get no referrer either way.
    "referrer-policy": "same-origin",
    "cache-control": "no-store",
}
_MAX_FORM_BYTES = 8192
_STATIC = {
    "console.css": "text/css",
    "console.js": "text/javascript",
    "icon.svg": "image/svg+xml",
}


def _runtime(request: Request[Any, Any, Any]) -> Runtime:
    runtime: Runtime = request.app.state.runtime
    return runtime


def _html(text: str, status: int = 200, cookies: list[Cookie] | None = None) -> Response[str]:
    return Response(
        text,
        status_code=status,
        media_type="text/html",
        headers=PAGE_HEADERS,
        cookies=cookies or [],
    )


def _params(request: Request[Any, Any, Any]) -> dict[str, str]:
    return {name: value for name, value in request.query_params.items() if isinstance(value, str)}


def _to_sign_in(request: Request[Any, Any, Any]) -> Redirect:
    target = request.url.path
    if request.url.query:
        target += f"?{request.url.query}"
    return Redirect(f"/admin/sign-in?{urlencode({'next': target})}", status_code=303)


def _frame(access: Access, active: str) -> Frame:
    return Frame(active, access.csrf if access.signed_in else None)


def _error_page(error: GatewayError, access: Access, active: str) -> Response[str]:
    body = f'<h1>Error</h1><p class="panel">{esc(error.message)}</p>'
    frame = Frame(active, _frame(access, active).csrf, refresh=False)
    return _html(page("Error", body, frame), error.http_status)


# Pages ----------------------------------------------------------------------------------


Render = Callable[[Runtime, dict[str, str], Frame], Awaitable[str]]


async def _page(
    request: Request[Any, Any, Any], active: str, render: Render
) -> Response[str] | Redirect:
    """A signed-in page: ``render`` builds it; a GatewayError it raises shows as an error page."""
    access = access_of(request)
    if not access.allowed:
        return _to_sign_in(request)
    try:
        text = await render(_runtime(request), _params(request), _frame(access, active))
    except GatewayError as error:
        return _error_page(error, access, active)
    return _html(text)


async def _call_of(runtime: Runtime, path_id: int) -> dict[str, Any]:
    checked = call_id(path_id, "call_id")
    assert checked is not None  # the route matched an int
    found = await call_detail(runtime.engine, checked)
    if found is None:
        raise NotFound(f"No call {checked}.")
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


# Sign-in --------------------------------------------------------------------------------


def _safe_next(value: str | None) -> str:
    """Only a console path: never another site (``//host``) or another scheme."""
    if not value or not value.startswith("/admin") or value.startswith("//") or "\\" in value:
        return "/admin/"
    return value


def _cookie(request: Request[Any, Any, Any], name: str, value: str, max_age: int) -> Cookie:
    return Cookie(
        key=name,
        value=value,
        max_age=max_age,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=is_https(request),
    )


def _sign_in_form(
    request: Request[Any, Any, Any], next_path: str, message: str | None, status: int = 200
) -> Response[str]:
    signer = signer_of(request)
    if signer is None:
        return _html(sign_in_page("", next_path, message, available=False), status)
    seed = request.cookies.get(SIGN_IN_COOKIE)
    cookies = []
    if not seed or not seed.isalnum() or len(seed) > 64:
        seed = secrets.token_hex(16)
        cookies.append(_cookie(request, SIGN_IN_COOKIE, seed, 3600))
    csrf = signer.csrf_token(f"signin:{seed}")
    return _html(sign_in_page(csrf, next_path, message, available=True), status, cookies)


@get("/admin/sign-in", include_in_schema=False)
async def sign_in_form(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    next_path = _safe_next(request.query_params.get("next"))
    if access_of(request).allowed:
        return Redirect(next_path, status_code=303)
    return _sign_in_form(request, next_path, None)


async def _form(request: Request[Any, Any, Any]) -> dict[str, str]:
    content_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
    if content_type != "application/x-www-form-urlencoded":
        raise InvalidRequest("The console's forms post application/x-www-form-urlencoded.")
    body = await request.body()
    if len(body) > _MAX_FORM_BYTES:
        raise InvalidRequest("The form is too large.")
    parsed = parse_qs(body.decode("utf-8", "replace"), max_num_fields=8)
    return {name: values[0] for name, values in parsed.items() if values}


def _cross_site(request: Request[Any, Any, Any]) -> bool:
    scheme = request.scope.get("scheme", "http")
    return not same_origin(request.headers.get("origin"), request.headers.get("host"), scheme)


@post("/admin/sign-in", include_in_schema=False, status_code=303)
async def sign_in(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    signer = signer_of(request)
    form = await _form(request)
    next_path = _safe_next(form.get("next"))
    if signer is None:
        return _sign_in_form(request, next_path, None, 403)
    if _cross_site(request):
        return _sign_in_form(request, next_path, "Refused: the form came from another site.", 403)
    seed = request.cookies.get(SIGN_IN_COOKIE)
    if not signer.csrf_valid(f"signin:{seed}" if seed else None, form.get("csrf")):
        return _sign_in_form(request, next_path, "The form expired: sign in again.", 403)
    runtime = _runtime(request)
    if not runtime.keys.is_admin(f"Bearer {form.get('key', '')}"):
        return _sign_in_form(request, next_path, "That is not the admin key.", 401)
    token = signer.issue(time.time(), secrets.token_hex(16))
    response = Redirect(next_path, status_code=303)
    response.cookies.append(_cookie(request, SESSION_COOKIE, token, signer.lifetime_seconds))
    response.cookies.append(_cookie(request, SIGN_IN_COOKIE, "", 0))
    response.headers.update(PAGE_HEADERS)
    return response


@post("/admin/sign-out", include_in_schema=False, status_code=303)
async def sign_out(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    form = await _form(request)
    access = access_of(request)
    if _cross_site(request) or not access.signed_in or form.get("csrf") != access.csrf:
        return Redirect("/admin/sign-in", status_code=303)
    response = Redirect("/admin/sign-in", status_code=303)
    response.cookies.append(_cookie(request, SESSION_COOKIE, "", 0))
    return response


# JSON -----------------------------------------------------------------------------------


def _require(request: Request[Any, Any, Any]) -> None:
    if not access_of(request).allowed:
        raise AuthenticationFailed("Missing or invalid admin key or console session.")


@get("/admin/api/overview", include_in_schema=False)
async def api_overview(request: Request[Any, Any, Any]) -> dict[str, Any]:
    _require(request)
    return await overview_data(_runtime(request), _params(request), utc_now())


@get("/admin/api/calls", include_in_schema=False)
async def api_calls(request: Request[Any, Any, Any]) -> dict[str, Any]:
    _require(request)
    return await calls_data(_runtime(request), _params(request))


@get("/admin/api/calls/{call_id:int}", include_in_schema=False)
async def api_call(request: Request[Any, Any, Any]) -> dict[str, Any]:
    _require(request)
    return await _call_of(_runtime(request), request.path_params["call_id"])


@get("/admin/api/providers", include_in_schema=False)
async def api_providers(request: Request[Any, Any, Any]) -> dict[str, Any]:
    _require(request)
    return await providers_data(_runtime(request), utc_now())


@get("/admin/api/budgets", include_in_schema=False)
async def api_budgets(request: Request[Any, Any, Any]) -> dict[str, Any]:
    _require(request)
    return await budgets_data(_runtime(request), utc_now())


CONSOLE_HANDLERS = [
    overview,
    calls,
    call,
    why,
    providers,
    budgets,
    static,
    sign_in_form,
    sign_in,
    sign_out,
    api_overview,
    api_calls,
    api_call,
    api_providers,
    api_budgets,
]
