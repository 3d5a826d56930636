"""Vertex AI access tokens: google-auth credentials, refreshed off the event loop.

``google-auth`` is the optional extra ``[vertex]``: it is imported here, on a provider's
first call, never by a process that has no vertex provider. Credentials come from the
provider's ``credentialsFile`` (a service-account JSON) or else Application Default
Credentials. A token is kept until google-auth deems it stale (minutes before it
expires); then one refresh runs in a worker thread while the calls that need it wait,
so a call never fetches a token of its own.
"""

from __future__ import annotations

import asyncio
from typing import Any

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind

SCOPE = "https://www.googleapis.com/auth/cloud-platform"
EXTRA_HINT = "pip install 'llm-gateway[vertex]'"


class TokenSource:
    def __init__(self, credentials_file: str | None) -> None:
        self._file = credentials_file
        self._credentials: Any = None
        self._lock = asyncio.Lock()
        self.refreshes = 0  # tokens fetched, since start

    async def token(self) -> str:
        credentials = self._credentials
        if credentials is not None and credentials.valid:
            return str(credentials.token)
        async with self._lock:  # one refresh at a time; the others find its token
            credentials = self._credentials
            if credentials is None or not credentials.valid:
                credentials = await asyncio.to_thread(_refreshed, self._file, credentials)
                self._credentials = credentials
                self.refreshes += 1
            return str(credentials.token)

    def forget(self) -> None:
        """The upstream refused the token: the next call fetches a new one."""
        credentials = self._credentials
        if credentials is not None:
            credentials.token = None


def _refreshed(path: str | None, credentials: Any) -> Any:
    """Credentials holding a fresh token (blocking: runs in a worker thread)."""
    try:
        import google.auth
        import google.auth.exceptions
        import google.auth.transport.requests
        from google.oauth2 import service_account
    except ImportError as exc:  # the configuration check says so first
        raise UpstreamError(
            FailureKind.AUTH_REJECTED, f"adapter 'vertex' needs google-auth: {EXTRA_HINT}"
        ) from exc
    try:
        if credentials is None:
            if path is not None:
                credentials = service_account.Credentials.from_service_account_file(  # type: ignore[no-untyped-call]
                    path, scopes=[SCOPE]
                )
            else:
                credentials, _ = google.auth.default(scopes=[SCOPE])
        credentials.refresh(google.auth.transport.requests.Request())
    except google.auth.exceptions.TransportError as exc:
        raise UpstreamError(FailureKind.CONNECT, "could not reach Google's token endpoint") from exc
    except (google.auth.exceptions.GoogleAuthError, OSError, ValueError) as exc:
        # The message may quote the credentials' file; the type says enough.
        raise UpstreamError(
            FailureKind.AUTH_REJECTED,
            f"could not get a Vertex AI access token ({type(exc).__name__})",
        ) from exc
    return credentials
