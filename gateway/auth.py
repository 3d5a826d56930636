"""Gateway keys: held only as SHA-256 digests, compared in constant time."""

from __future__ import annotations

import hmac

from gateway.domain.keys import hash_key
from gateway.domain.settings import ApiKey, AuthSettings


def is_keyless(auth: AuthSettings) -> bool:
    """No key is configured and ``allowUnauthenticated`` allows that: anyone may call."""
    return auth.allow_unauthenticated and not auth.keys


class KeyRing:
    def __init__(self, auth: AuthSettings) -> None:
        self._by_digest = {k.key_hash: k for k in auth.keys}
        self._admin = auth.admin_key_hash
        self.open = is_keyless(auth)

    def identify(self, authorization: str | None) -> ApiKey | None:
        """The key a ``Bearer`` header presents, or None.

        Lookup is by digest (a timing difference there reveals nothing about a key,
        only about a hash); the final comparison is constant-time all the same.
        """
        presented = _bearer(authorization)
        if presented is None:
            return None
        presented_digest = hash_key(presented)
        key = self._by_digest.get(presented_digest)
        if key is None or not hmac.compare_digest(key.key_hash, presented_digest):
            return None
        return key

    def is_admin(self, authorization: str | None) -> bool:
        presented = _bearer(authorization)
        if presented is None or self._admin is None:
            return False
        return hmac.compare_digest(self._admin, hash_key(presented))


def _bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()
