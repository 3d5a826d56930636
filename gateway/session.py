"""Console sessions (docs/console.md, "Sign-in"): signed, expiring tokens, and CSRF tokens.

A session token is ``<expires>.<nonce>.<signature>``: the expiry (Unix seconds), a
random nonce, and an HMAC-SHA256 of both. The signing key is derived from the admin
key's digest, so every worker of every host sharing the config accepts the same
sessions, and changing ``auth.adminKey`` ends them all: the signer is part of what a
reload rebuilds (gateway.runtime.Serving). The token holds no key. A session signed out
before it expires is refused by its nonce, listed in the database
(gateway.db.console_sessions).

CSRF tokens are HMACs of a session's nonce (forms of a signed-in page) or of a
random pre-sign-in value that is also set as a cookie (the sign-in form).
Pure: the clock and the randomness are passed in.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

_VERSION = b"gateway-console-session-v1"


def _b(value: str) -> bytes:
    return value.encode("ascii")


@dataclass(frozen=True, slots=True)
class Session:
    expires: int  # Unix seconds
    nonce: str


class SessionSigner:
    def __init__(self, admin_key_hash: str, lifetime_seconds: int) -> None:
        self._key = hmac.new(bytes.fromhex(admin_key_hash), _VERSION, hashlib.sha256).digest()
        self.lifetime_seconds = lifetime_seconds

    def _sign(self, purpose: str, message: str) -> str:
        return hmac.new(self._key, _b(f"{purpose}:{message}"), hashlib.sha256).hexdigest()

    def issue(self, now: float, nonce: str) -> str:
        """A new session token, valid for ``lifetime_seconds`` from ``now``."""
        if not nonce.isalnum():
            raise ValueError("the nonce must be alphanumeric")
        expires = int(now) + self.lifetime_seconds
        body = f"{expires}.{nonce}"
        return f"{body}.{self._sign('session', body)}"

    def verify(self, token: str | None, now: float) -> Session | None:
        """The session ``token`` carries, or None when it is malformed, forged or expired."""
        if not token or len(token) > 256:
            return None
        parts = token.split(".")
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isalnum():
            return None
        expires_text, nonce, signature = parts
        expected = self._sign("session", f"{expires_text}.{nonce}")
        if not hmac.compare_digest(_b(expected), signature.encode("ascii", "replace")):
            return None
        expires = int(expires_text)
        if expires <= now:
            return None
        return Session(expires, nonce)

    def csrf_token(self, seed: str) -> str:
        """The token a form carries: bound to a session's nonce or a sign-in cookie."""
        return self._sign("csrf", seed)

    def csrf_valid(self, seed: str | None, presented: str | None) -> bool:
        if not seed or not presented:
            return False
        return hmac.compare_digest(_b(self.csrf_token(seed)), presented.encode("ascii", "replace"))


def signer_for(admin_key_hash: str | None, lifetime_hours: int) -> SessionSigner | None:
    """The signer of ``auth.adminKey``'s sessions; None without an admin key (no sign-in)."""
    return SessionSigner(admin_key_hash, lifetime_hours * 3600) if admin_key_hash else None


def same_origin(origin: str | None, host: str | None, scheme: str) -> bool:
    """A POST's ``Origin`` names this server (scheme and host as the request reached it).

    A missing Origin is refused: every browser that supports SameSite cookies sends
    one on a POST.
    """
    if not origin or not host:
        return False
    return origin.strip().lower() == f"{scheme}://{host.strip().lower()}"
