"""The provider's own key kept out of what an upstream says (pure).

One rule for every answer, stream event, stored field and error body: the provider's
key is replaced by ``REDACTED`` wherever it shows. Error bodies (``error_body.py``)
also lose a key echoed masked (``sk-ab****yz``); an answer keeps its runs of
asterisks, which are ordinary text there.

An answer is looked at as bytes: one search per answer or event is cheap (about
0.2 µs for a chat stream's event), and only one that holds the key is rewritten. A
key holds no character JSON must escape (quotes, backslashes, controls), so its bytes
can only sit inside a JSON string, and replacing them leaves valid JSON and SSE behind.
A whole answer is searched as the gateway re-encodes it (msgspec writes ASCII and ``/``
unescaped), so a key the upstream spelt with escapes is found there too.
"""

from __future__ import annotations

import functools

REDACTED = "[redacted]"
_REDACTED = REDACTED.encode()


def redact_key(text: str, api_key: str | None) -> str:
    """``text`` with the provider key replaced (a stored field, a decoded string)."""
    if api_key and api_key in text:
        return text.replace(api_key, REDACTED)
    return text


def redact_optional(text: str | None, api_key: str | None) -> str | None:
    return None if text is None else redact_key(text, api_key)


@functools.lru_cache(maxsize=256)
def key_spellings(api_key: str) -> tuple[bytes, ...]:
    """The key's bytes as JSON may carry them: as is, and with ``/`` escaped as ``\\/``.

    (A ``\\u`` escape is caught by reading the decoded value: see the stream relay.)
    """
    plain = api_key.encode()
    escaped = plain.replace(b"/", b"\\/")
    return (plain, escaped) if escaped != plain else (plain,)


def redact_bytes(data: bytes, spellings: tuple[bytes, ...]) -> bytes:
    """``data`` (JSON or SSE bytes) with every spelling replaced; ``data`` itself when
    none is there."""
    for spelling in spellings:
        # find rather than ``in``: about half the cost on a stream event (measured).
        if data.find(spelling) >= 0:
            data = data.replace(spelling, _REDACTED)
    return data


def redact_key_bytes(data: bytes, api_key: str | None) -> bytes:
    return redact_bytes(data, key_spellings(api_key)) if api_key else data
