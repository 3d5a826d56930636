"""Upstream error bodies made safe to hand to a client (pure).

An error body is decoded by its Content-Encoding first (the gateway asks for
``identity``, but an upstream may compress anyway), then as JSON when it is JSON.
The provider key is removed wherever it shows: inside every decoded JSON string,
so an echo spelt with JSON escapes (``sk-\\u0070roj...``) is caught as well, or in
the text of a body that is not JSON. What a client then receives is always an
OpenAI error envelope: an upstream envelope as the upstream wrote it (redacted),
anything else wrapped in one, with at most a short, cleaned excerpt of the text.
"""

from __future__ import annotations

import html
import re
import zlib
from dataclasses import dataclass
from typing import Any

import msgspec

from gateway.domain.errors import GatewayException, envelope, error_type_for
from gateway.upstream.redaction import REDACTED, redact_key

MAX_DECODED_BYTES = 256 * 1024  # a small compressed body may inflate a thousandfold
EXCERPT_CHARS = 200
MESSAGE_CHARS = 1000

# A masked key as providers echo it ("sk-proj-ab****wxyz"): part of a key all the same.
_MASKED_KEY = re.compile(r"[A-Za-z0-9_\-]*\*{4,}[A-Za-z0-9_\-]*")
_UNICODE_ESCAPE = re.compile(r"\\u([0-9a-fA-F]{4})")
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
_HTML_PAGE = re.compile(r"\s*<(!doctype|html|head)\b", re.IGNORECASE)
_SCRIPT = re.compile(r"<(script|style)\b.*?(</\1\s*>|$)", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]*>")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_ENCODER = msgspec.json.Encoder()


@dataclass(frozen=True, slots=True)
class ErrorBody:
    """An upstream error body, decoded and already redacted."""

    data: Any = None  # the decoded JSON, when the body was JSON
    is_json: bool = False
    text: str = ""  # the body's text, when it was not JSON
    content_type: str = ""
    unreadable: str | None = None  # the Content-Encoding that could not be undone


class UndecodableBody(GatewayException, ValueError):
    pass


def read_error_body(
    raw: bytes, content_type: str, content_encoding: str | None, api_key: str | None
) -> ErrorBody:
    kind = _clean(content_type.split(";")[0], 60)
    try:
        decoded = decode_content(raw, content_encoding)
    except UndecodableBody:
        return ErrorBody(content_type=kind, unreadable=_clean(content_encoding or "", 40))
    try:
        data = redact_json(msgspec.json.decode(decoded), api_key)
    except (msgspec.DecodeError, RecursionError):
        text = redact_text(_unescape(decoded.decode("utf-8", errors="replace")), api_key)
        return ErrorBody(text=text, content_type=kind)
    return ErrorBody(data=data, is_json=True, content_type=kind)


def decode_content(raw: bytes, content_encoding: str | None) -> bytes:
    """Undo ``gzip``/``deflate`` (applied in the order listed); anything else is refused.

    The result stops at ``MAX_DECODED_BYTES``: the rest of a body that large is no use
    to an error message.
    """
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    for coding in reversed(codings):
        if coding == "identity":
            continue
        if coding in ("gzip", "x-gzip"):
            raw = _inflate(raw, 16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            try:
                raw = _inflate(raw, zlib.MAX_WBITS)
            except UndecodableBody:  # some servers send raw deflate without the zlib header
                raw = _inflate(raw, -zlib.MAX_WBITS)
        else:
            raise UndecodableBody(coding)
    return raw[:MAX_DECODED_BYTES]


def _inflate(raw: bytes, wbits: int) -> bytes:
    inflater = zlib.decompressobj(wbits)
    try:
        return inflater.decompress(raw, MAX_DECODED_BYTES)
    except zlib.error as exc:
        raise UndecodableBody(str(exc)) from exc


def redact_text(text: str, api_key: str | None) -> str:
    """The provider key (``redact_key``), and any masked key, replaced."""
    return _MASKED_KEY.sub(REDACTED, redact_key(text, api_key))


def redact_json(value: Any, api_key: str | None) -> Any:
    """Every string of a decoded JSON value redacted, object keys included."""
    if isinstance(value, str):
        return redact_text(value, api_key)
    if isinstance(value, list):
        return [redact_json(item, api_key) for item in value]
    if isinstance(value, dict):
        return {redact_text(k, api_key): redact_json(v, api_key) for k, v in value.items()}
    return value


def openai_envelope(status: int | None, body: ErrorBody) -> dict[str, Any]:
    """The envelope a client gets for an upstream error (``status`` None: a stream's event).

    An upstream OpenAI envelope keeps its fields (missing ones filled in) and loses
    whatever sat beside ``error`` (such as an account id); any other body is wrapped.
    """
    kind = error_type_for(status) if status is not None else "api_error"
    lead = (
        f"The upstream answered HTTP {status}"
        if status is not None
        else "The upstream's stream reported an error"
    )
    error = body.data.get("error") if body.is_json and isinstance(body.data, dict) else None
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return {"error": {"type": kind, "param": None, "code": None, **error}}
    return envelope(status, _wrapped_message(lead, body), code="upstream_error")


def stream_error_envelope(
    chunk: dict[str, Any] | None, data: str, api_key: str | None
) -> dict[str, Any]:
    """An upstream's mid-stream error event (its decoded object, else its raw data) as the
    envelope the client gets."""
    if chunk is not None:
        try:
            body = ErrorBody(data=redact_json(chunk, api_key), is_json=True)
        except RecursionError:  # nested nearly as deep as the decoder goes: show nothing
            body = ErrorBody(data={}, is_json=True)
    else:
        body = ErrorBody(text=redact_text(_unescape(data), api_key))
    return openai_envelope(None, body)


def _wrapped_message(lead: str, body: ErrorBody) -> str:
    if body.unreadable is not None:
        return (
            f"{lead} with an error body the gateway could not decode "
            f"(content-encoding {body.unreadable})."
        )
    if body.is_json:
        found = _message_in(body.data)
        if found:
            return _clean(found, MESSAGE_CHARS)
        shown = _clean(_ENCODER.encode(body.data).decode(), EXCERPT_CHARS)
        return f"{lead} with an error body in no known shape: {shown}"
    excerpt = _excerpt(body)
    if not excerpt and not body.text.strip():
        return f"{lead} with an empty error body."
    kind = f" ({body.content_type})" if body.content_type else ""
    return f"{lead} with a non-JSON error body{kind}" + (f": {excerpt}" if excerpt else ".")


def _message_in(data: Any) -> str | None:
    """The message of the common non-OpenAI error shapes, if the body has one."""
    if isinstance(data, str):
        return data
    if not isinstance(data, dict):
        return None
    for name in ("error", "detail", "message"):
        value = data.get(name)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list):  # FastAPI validation: [{"loc": ..., "msg": ...}, ...]
            parts = [
                item["msg"]
                for item in value
                if isinstance(item, dict) and isinstance(item.get("msg"), str)
            ]
            if parts:
                return "; ".join(parts)
    return None


def _excerpt(body: ErrorBody) -> str:
    """An HTML page gives its title only; other text its first words, scripts left out."""
    text = body.text
    if "html" in body.content_type or _HTML_PAGE.match(text):
        title = _TITLE.search(text)
        return _clean(title.group(1), EXCERPT_CHARS) if title else ""
    return _clean(text, EXCERPT_CHARS)


def _unescape(text: str) -> str:
    """Spell out ``\\uXXXX`` and HTML character references before the key is looked for."""
    text = _UNICODE_ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)
    return html.unescape(text) if "&" in text else text


def _clean(text: str, limit: int) -> str:
    """One line of plain text: no markup, no control characters, at most ``limit`` chars."""
    text = text[: limit * 20]  # enough to fill ``limit`` once markup and spaces are gone
    text = _TAG.sub(" ", _SCRIPT.sub(" ", text)).replace("<", " ").replace(">", " ")
    text = " ".join(_CONTROL.sub(" ", _ANSI.sub("", text)).split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"
