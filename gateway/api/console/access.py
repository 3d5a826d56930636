"""Who may read the console (docs/console.md, "Sign-in"): a session cookie, or the admin key.

- keyless mode without ``auth.adminKey``: open (loopback only), no sign-in;
- ``Authorization: Bearer <adminKey>``: API use, no cookie, no CSRF token needed
  (a browser never adds that header by itself);
- the session cookie that signing in sets: signed, expiring, HttpOnly, SameSite=Strict,
  Secure when the request came over https.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from litestar.connection import ASGIConnection

from gateway.runtime import Runtime
from gateway.session import SessionSigner

SESSION_COOKIE = "console_session"
SIGN_IN_COOKIE = "console_signin"
COOKIE_PATH = "/admin"


@dataclass(frozen=True, slots=True)
class Access:
    allowed: bool
    csrf: str | None = None  # the token of the sign-out form, for a cookie session
    signed_in: bool = False


DENIED = Access(False)


def signer_of(connection: ASGIConnection[Any, Any, Any, Any]) -> SessionSigner | None:
    signer: SessionSigner | None = connection.app.state.console_signer
    return signer


def build_signer(runtime_hash: str | None, hours: int) -> SessionSigner | None:
    return SessionSigner(runtime_hash, hours * 3600) if runtime_hash else None


def access_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Access:
    runtime: Runtime = connection.app.state.runtime
    if runtime.keys.open and runtime.config.auth.admin_key_hash is None:
        return Access(True)
    if runtime.keys.is_admin(connection.headers.get("authorization")):
        return Access(True)
    signer = signer_of(connection)
    if signer is None:
        return DENIED
    session = signer.verify(connection.cookies.get(SESSION_COOKIE), time.time())
    if session is None:
        return DENIED
    return Access(True, signer.csrf_token(f"session:{session.nonce}"), signed_in=True)


def is_https(connection: ASGIConnection[Any, Any, Any, Any]) -> bool:
    """The request's scheme: uvicorn sets it from X-Forwarded-Proto only for the proxies
    it trusts (docs/operations.md, "Behind a reverse proxy")."""
    return connection.scope.get("scheme") == "https"
