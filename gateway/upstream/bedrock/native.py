"""``/v1/messages`` to Claude on Bedrock, native (pure): which models take it, the body
InvokeModel takes, and the Anthropic event inside each ``chunk`` of
InvokeModelWithResponseStream, and CountTokens' body.

Bedrock takes Anthropic's Messages body less ``model`` (the model id is in the URL) and
``stream`` (the operation says it), with ``anthropic_version`` (``bedrock-2023-05-31``)
and the ``anthropic-beta`` header's values as ``anthropic_beta`` in the body. A stream's
``chunk`` events carry ``{"bytes": "<base64 of one Anthropic event's JSON>"}``; the last
one's event also carries ``amazon-bedrock-invocationMetrics``, Bedrock's own, which is no
part of Anthropic's event and is left out.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import msgspec

DEFAULT_VERSION = "bedrock-2023-05-31"
METRICS = "amazon-bedrock-invocationMetrics"
_decoder = msgspec.json.Decoder()


def natively_claude(model_name: str) -> bool:
    """A Claude model on Bedrock: a model id (``anthropic.claude-…``), a cross-region
    inference profile (``us.anthropic.claude-…``) or an ARN naming one."""
    return "anthropic." in model_name


def native_body(
    body: dict[str, Any], headers: dict[str, str], api_version: str | None
) -> dict[str, Any]:
    """The client's body as Bedrock takes it; the client's own ``anthropic_version`` or
    ``anthropic_beta`` would not be Bedrock's, so the gateway's replace them."""
    payload = {k: v for k, v in body.items() if k not in ("model", "stream")}
    payload["anthropic_version"] = api_version or DEFAULT_VERSION
    betas = [b.strip() for b in headers.get("anthropic-beta", "").split(",") if b.strip()]
    payload.pop("anthropic_beta", None)
    if betas:
        payload["anthropic_beta"] = betas
    return payload


def count_body(
    body: dict[str, Any], headers: dict[str, str], api_version: str | None
) -> dict[str, Any]:
    """CountTokens' body for a Messages body: ``{"input": {"invokeModel": {"body": …}}}``,
    the InvokeModel body base64 (a count takes no ``max_tokens``; InvokeModel requires one,
    and it changes no input count)."""
    payload = native_body(body, headers, api_version)
    payload.setdefault("max_tokens", 1)
    encoded = base64.b64encode(msgspec.json.encode(payload)).decode()
    return {"input": {"invokeModel": {"body": encoded}}}


def chunk_event(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The Anthropic event a ``chunk`` frame's payload carries (Bedrock's metrics left
    out), or None when it carries none that is a JSON object with a ``type``."""
    raw = payload.get("bytes")
    if not isinstance(raw, str):
        return None
    try:
        event: Any = _decoder.decode(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError, msgspec.DecodeError, RecursionError):
        return None
    if not isinstance(event, dict) or not isinstance(event.get("type"), str):
        return None
    event.pop(METRICS, None)
    return event
