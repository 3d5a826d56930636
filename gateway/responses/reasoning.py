"""A provider's reasoning block carried in a Responses ``reasoning`` item (pure).

Anthropic's extended thinking answers with ``thinking`` blocks (the text and Anthropic's
``signature`` over it) and ``redacted_thinking`` blocks (``data``); a later turn of a tool
loop must send them back unchanged. A translated Responses answer carries each block as
a ``reasoning`` item's ``encrypted_content`` when the request's ``include`` asks for
``reasoning.encrypted_content``; the client sends the item back in ``input`` and the
block is restored. The value is ``gwr1.`` and the block's JSON in URL-safe base64: it is
not encrypted by the gateway (the thinking text can be read back from it), and it is
tamper-evident only through Anthropic's signature, which Anthropic checks.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

PREFIX = "gwr1."
_KINDS = {"thinking": ("thinking", "signature"), "redacted_thinking": ("data",)}


def encode(block: dict[str, Any]) -> str:
    """The ``encrypted_content`` of a thinking block (only its own fields are kept)."""
    kind = str(block.get("type"))
    fields = {name: block.get(name) for name in _KINDS.get(kind, ())}
    text = json.dumps({"type": kind, **fields}, separators=(",", ":"), ensure_ascii=False)
    return PREFIX + base64.urlsafe_b64encode(text.encode()).decode()


def whole(block: Any) -> bool:
    """``block`` holds what the provider needs back: a thinking text and its signature, or
    redacted data."""
    return isinstance(block, dict) and decode(encode(block)) is not None


def decode(value: Any) -> dict[str, Any] | None:
    """The thinking block ``value`` carries; None when it is not one of the gateway's (a
    native provider's reasoning, say) or does not hold a whole block."""
    if not isinstance(value, str) or not value.startswith(PREFIX):
        return None
    try:
        block = json.loads(base64.urlsafe_b64decode(value[len(PREFIX) :].encode()))
    except (binascii.Error, ValueError):
        return None
    if not isinstance(block, dict) or block.get("type") not in _KINDS:
        return None
    fields = _KINDS[block["type"]]
    if not all(isinstance(block.get(name), str) for name in fields):
        return None
    return {"type": block["type"], **{name: block[name] for name in fields}}
