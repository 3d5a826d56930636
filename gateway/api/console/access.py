"""Who may read the console (docs/console.md, "Sign-in"): a session cookie, or the admin key.

- keyless mode without ``auth.adminKey``: open (loopback only), no sign-in;
- ``Authorization: Bearer <adminKey>``: API use, no cookie, no CSRF token needed
  (a browser never adds that header by itself);
- the session cookie that signing in sets: signed by the current admin key (a reload
  that changes or removes it ends every session), expiring, not signed out (one
  primary-key read of ``console_revoked_sessions``), HttpOnly, SameSite=Strict, Secure
  when the request came over https.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from litestar.connection import ASGIConnection

from gateway.runtime import Runtime
from gateway.session import Session, SessionSigner

SESSION_COOKIE = "console_session"
SIGN_IN_COOKIE = "console_signin"
COOKIE_PATH = "/admin"


@dataclass(frozen=True, slots=True)
class Access:
    allowed: bool
    csrf: str | None = None  # the token of the sign-out form, for a cookie session
    session: Session | None = None  # the cookie's session, when that is what signed in

    @property
    def signed_in(self) -> bool:
        return self.session is not None


DENIED = Access(False)


def runtime_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Runtime:
    runtime: Runtime = connection.app.state.runtime
    return runtime


def signer_of(connection: ASGIConnection[Any, Any, Any, Any]) -> SessionSigner | None:
    """The current configuration's signer: None while no ``auth.adminKey`` is set."""
    return runtime_of(connection).serving.signer


async def access_of(connection: ASGIConnection[Any, Any, Any, Any]) -> Access:
    """Raises SessionCheckFailed (503) when a cookie's sign-out cannot be read."""
    runtime = runtime_of(connection)
    serving = runtime.serving  # once: a reload may swap it while the check awaits
    if serving.keys.open and serving.config.auth.admin_key_hash is None:
        return Access(True)
    if serving.keys.is_admin(connection.headers.get("authorization")):
        return Access(True)
    signer = serving.signer
    if signer is None:
        return DENIED
    session = signer.verify(connection.cookies.get(SESSION_COOKIE), time.time())
    if session is None or await runtime.revocations.is_revoked(session.nonce):
        return DENIED
    return Access(True, signer.csrf_token(f"session:{session.nonce}"), session)


def client_address(connection: ASGIConnection[Any, Any, Any, Any]) -> str:
    """The client's address as uvicorn resolved it: the peer, or the ``X-Forwarded-For``
    of a proxy it trusts (``FORWARDED_ALLOW_IPS``; docs/operations.md, "Behind a reverse
    proxy")."""
    client = connection.scope.get("client")
    return str(client[0]) if client else "unknown"


def is_https(connection: ASGIConnection[Any, Any, Any, Any]) -> bool:
    """The request's scheme: uvicorn sets it from X-Forwarded-Proto only for the proxies
    it trusts (docs/operations.md, "Behind a reverse proxy")."""
    return connection.scope.get("scheme") == "https"
