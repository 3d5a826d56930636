"""Signing in to the console and out of it (docs/console.md, "Sign-in").

Both forms are checked for their Origin and a CSRF token. Wrong admin keys are counted
per client address (gateway.api.console.throttle): past the limit the address gets 429
with ``Retry-After``, and one warning line names it (never a key). Signing out lists the
session in the database (gateway.db.console_sessions), so its cookie, replayed, is
refused by every process.
"""

from __future__ import annotations

import logging
import secrets
import time
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

from litestar import Request, get, post
from litestar.datastructures import Cookie
from litestar.response import Redirect, Response

from gateway.api.console.access import (
    COOKIE_PATH,
    SESSION_COOKIE,
    SIGN_IN_COOKIE,
    access_of,
    client_address,
    is_https,
    runtime_of,
)
from gateway.api.console.answers import PAGE_HEADERS, error_page, html_response
from gateway.api.console.throttle import SignInThrottle
from gateway.api.console.views.sign_in import sign_in_page
from gateway.domain.clock import utc_now
from gateway.domain.errors import InvalidRequest, SessionCheckFailed
from gateway.runtime import Serving
from gateway.session import SessionSigner, same_origin

log = logging.getLogger("gateway.console")

_MAX_FORM_BYTES = 8192
_THROTTLED = "Too many wrong admin keys from your address: try again in {seconds} s."


def _throttle(request: Request[Any, Any, Any]) -> SignInThrottle:
    throttle: SignInThrottle = request.app.state.console_throttle
    return throttle


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
    request: Request[Any, Any, Any],
    signer: SessionSigner | None,
    next_path: str,
    message: str | None,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Response[str]:
    if signer is None:
        return html_response(sign_in_page("", next_path, message, available=False), status)
    seed = request.cookies.get(SIGN_IN_COOKIE)
    cookies = []
    if not seed or not seed.isalnum() or len(seed) > 64:
        seed = secrets.token_hex(16)
        cookies.append(_cookie(request, SIGN_IN_COOKIE, seed, 3600))
    csrf = signer.csrf_token(f"signin:{seed}")
    text = sign_in_page(csrf, next_path, message, available=True)
    return html_response(text, status, cookies, headers)


@get("/admin/sign-in", include_in_schema=False)
async def sign_in_form(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    next_path = _safe_next(request.query_params.get("next"))
    try:
        allowed = (await access_of(request)).allowed
    except SessionCheckFailed:
        allowed = False  # the form still works; the page it leads to says what failed
    if allowed:
        return Redirect(next_path, status_code=303)
    return _sign_in_form(request, runtime_of(request).serving.signer, next_path, None)


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
    serving = runtime_of(request).serving  # once: the key checked is the signer's
    signer = serving.signer
    form = await _form(request)
    next_path = _safe_next(form.get("next"))
    if signer is None:
        return _sign_in_form(request, None, next_path, None, 403)
    if _cross_site(request):
        message = "Refused: the form came from another site."
        return _sign_in_form(request, signer, next_path, message, 403)
    seed = request.cookies.get(SIGN_IN_COOKIE)
    if not signer.csrf_valid(f"signin:{seed}" if seed else None, form.get("csrf")):
        return _sign_in_form(request, signer, next_path, "The form expired: sign in again.", 403)
    return _check_key(request, serving, signer, form.get("key", ""), next_path)


def _check_key(
    request: Request[Any, Any, Any],
    serving: Serving,
    signer: SessionSigner,
    key: str,
    next_path: str,
) -> Response[str] | Redirect:
    """The admin key, unless this address is throttled; a session cookie when it is right."""
    throttle, address, now = _throttle(request), client_address(request), time.monotonic()
    wait = throttle.retry_after(address, now)
    if wait is not None:
        message = _THROTTLED.format(seconds=wait)
        return _sign_in_form(request, signer, next_path, message, 429, {"retry-after": str(wait)})
    if not serving.keys.is_admin(f"Bearer {key}"):
        if throttle.failed(address, now):
            log.warning(
                "console sign-in throttled for %s: %d wrong admin keys within %d s",
                address,
                throttle.limit,
                int(throttle.window_seconds),
            )
        return _sign_in_form(request, signer, next_path, "That is not the admin key.", 401)
    throttle.succeeded(address)
    token = signer.issue(time.time(), secrets.token_hex(16))
    response = Redirect(next_path, status_code=303)
    response.cookies.append(_cookie(request, SESSION_COOKIE, token, signer.lifetime_seconds))
    response.cookies.append(_cookie(request, SIGN_IN_COOKIE, "", 0))
    response.headers.update(PAGE_HEADERS)
    return response


@post("/admin/sign-out", include_in_schema=False, status_code=303)
async def sign_out(request: Request[Any, Any, Any]) -> Response[str] | Redirect:
    form = await _form(request)
    try:
        access = await access_of(request)
        session = access.session
        if _cross_site(request) or session is None or form.get("csrf") != access.csrf:
            return Redirect("/admin/sign-in", status_code=303)
        expires = datetime.fromtimestamp(session.expires, UTC)
        await runtime_of(request).revocations.revoke(session.nonce, expires, utc_now())
    except SessionCheckFailed as error:
        return error_page(error, "")  # the cookie is kept: signing out again may work
    response = Redirect("/admin/sign-in", status_code=303)
    response.cookies.append(_cookie(request, SESSION_COOKIE, "", 0))
    return response


SIGN_IN_HANDLERS = [sign_in_form, sign_in, sign_out]
