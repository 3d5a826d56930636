"""How a Bedrock request is authorized: a Bedrock API key (``Authorization: Bearer``) or
AWS credentials from the standard chain (environment, shared profile, web identity or
role, container or instance metadata), signed with SigV4 by botocore's signer.

Credentials are resolved on a thread, never on the event loop, on the first call and
again only when botocore says they need refreshing (temporary credentials, 15 minutes
before they expire); every call signs with the frozen copy held here. botocore is
imported only here and only then: a process without a bedrock provider never loads it.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind

SIGNING_NAME = "bedrock"  # the service name SigV4 signs for (not bedrock-runtime)


class Authorizer(Protocol):
    async def headers(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        """``headers`` with the authorization the request needs."""
        ...


class BearerKey:
    """A Bedrock API key."""

    def __init__(self, api_key: str) -> None:
        self._authorization = f"Bearer {api_key}"

    async def headers(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        return {**headers, "authorization": self._authorization}


class SigV4:
    """AWS credentials of the default chain, for one region."""

    def __init__(self, region: str) -> None:
        self._region = region
        self._source: Any = None  # botocore Credentials (refreshable or not)
        self._frozen: Any = None  # botocore ReadOnlyCredentials, what calls sign with
        self._lock = asyncio.Lock()

    async def headers(self, url: str, body: bytes, headers: dict[str, str]) -> dict[str, str]:
        credentials = await self._current()
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method="POST", url=url, data=body, headers=headers)
        SigV4Auth(credentials, SIGNING_NAME, self._region).add_auth(request)
        return {name: str(value) for name, value in request.headers.items()}

    def _stale(self) -> bool:
        if self._frozen is None:
            return True
        refresh_needed = getattr(self._source, "refresh_needed", None)
        return bool(refresh_needed()) if refresh_needed is not None else False

    async def _current(self) -> Any:
        if not self._stale():
            return self._frozen
        async with self._lock:
            if self._stale():
                self._frozen = await asyncio.to_thread(self._resolve)
        return self._frozen

    def _resolve(self) -> Any:
        """On a thread: botocore's chain may read files or ask an endpoint."""
        try:
            return self._resolve_chain()
        except UpstreamError:
            raise
        except Exception as exc:  # botocore's own: a bad profile, STS refusing, a timeout
            raise UpstreamError(
                FailureKind.AUTH_REJECTED,
                f"AWS credentials could not be resolved: {type(exc).__name__}",
            ) from exc

    def _resolve_chain(self) -> Any:
        if self._source is None:
            import botocore.auth  # imported here, on the thread, for headers() to find
            import botocore.awsrequest
            import botocore.session

            self._source = botocore.session.get_session().get_credentials()
        if self._source is None:
            raise UpstreamError(
                FailureKind.AUTH_REJECTED,
                "no AWS credentials found (environment, shared profile, web identity or "
                "instance role); or give the provider a Bedrock apiKey",
            )
        return self._source.get_frozen_credentials()
