"""Bedrock's credentials: resolved on a thread on the first call, reused while botocore
says they are fresh, resolved again when it says they need refreshing."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import botocore.exceptions
import botocore.session
import pytest
from botocore.credentials import ReadOnlyCredentials

from gateway.domain.errors import UpstreamError
from gateway.domain.failures import FailureKind
from gateway.upstream.bedrock.auth import BearerKey, SigV4

URL = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse"


class Source:
    """Stands in for botocore's RefreshableCredentials."""

    def __init__(self) -> None:
        self.resolved_on: list[threading.Thread] = []
        self.needs_refresh = False

    def refresh_needed(self) -> bool:
        return self.needs_refresh

    def get_frozen_credentials(self) -> ReadOnlyCredentials:
        self.resolved_on.append(threading.current_thread())
        self.needs_refresh = False
        return ReadOnlyCredentials(f"AKID{len(self.resolved_on)}", "secret", "token")


class Session:
    def __init__(self, source: Source | None) -> None:
        self.source = source

    def get_credentials(self) -> Source | None:
        return self.source


def _sign(signer: SigV4, count: int) -> list[dict[str, str]]:
    async def run() -> list[dict[str, str]]:
        headers = {"content-type": "application/json"}
        return [await signer.headers(URL, b"{}", headers) for _ in range(count)]

    return asyncio.run(run())


def test_credentials_resolve_once_off_the_loop_and_again_when_stale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = Source()
    monkeypatch.setattr(botocore.session, "get_session", lambda: Session(source))
    signer = SigV4("us-east-1")
    signed = _sign(signer, 3)
    assert len(source.resolved_on) == 1  # not per call
    assert source.resolved_on[0] is not threading.main_thread()
    for headers in signed:
        assert (
            headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID1/")
            and "/us-east-1/bedrock/aws4_request" in headers["Authorization"]
        )
        assert headers["X-Amz-Security-Token"] == "token"
    source.needs_refresh = True
    (again,) = _sign(signer, 1)
    assert len(source.resolved_on) == 2
    assert again["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKID2/")


def test_no_credentials_is_the_gateways_own_auth_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(botocore.session, "get_session", lambda: Session(None))
    with pytest.raises(UpstreamError) as caught:
        _sign(SigV4("us-east-1"), 1)
    assert caught.value.kind is FailureKind.AUTH_REJECTED
    assert "no AWS credentials found" in caught.value.message


def test_a_failing_chain_is_named_by_its_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> Any:
        raise botocore.exceptions.ProfileNotFound(profile="missing")

    monkeypatch.setattr(botocore.session, "get_session", broken)
    with pytest.raises(UpstreamError) as caught:
        _sign(SigV4("us-east-1"), 1)
    assert caught.value.message == "AWS credentials could not be resolved: ProfileNotFound"


def test_an_api_key_is_a_bearer_token() -> None:
    headers = asyncio.run(BearerKey("ABSK-key").headers(URL, b"{}", {"accept": "x"}))
    assert headers == {"accept": "x", "authorization": "Bearer ABSK-key"}
