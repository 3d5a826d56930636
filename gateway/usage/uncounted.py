"""An upper bound, in tokens, of what a request sends upstream besides the text counted (pure).

The prompt count (``prompt.py``) counts the text a model reads: messages, input
items, prompts, tools. Everything else in the body reaches the upstream too and
may enter the prompt there: a ``response_format`` or ``text.format`` schema, a
file's ``file_data``, audio, legacy ``functions``, a message field or a field the
gateway does not know. It is counted by the UTF-8 size of its JSON: a token of
tiktoken's encodings (and of the byte-level BPEs of other makers) is at least one
byte, so no part counted this way costs the upstream more tokens than its size.

Not counted: parameters that never reach the prompt (top-level numbers, booleans
and null; ``model``, ``user``, ``stop``, ``metadata`` and the like), the framing key
``type`` (a part's or item's kind, in the per-message framing), and image data:
images are priced by the upstream in its own units (per tile or patch), not by
their bytes. Each image part counts ``IMAGE_TOKEN_BOUND`` tokens instead, the most
one image costs on the models the gateway reaches: OpenAI's tiles (85 + 170 per
512-px tile, at most 1,445 at high detail) and patches (at most 1,536 patches ×
1.62 = 2,488 on the mini models), Anthropic's ~1,600 (an image is scaled to at
most 1.15 megapixels, width × height / 750).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

import msgspec

# Top-level fields that are call parameters, not prompt content, whatever their value.
PARAMETERS = frozenset(
    {
        "model",
        "user",
        "safety_identifier",
        "stop",
        "logit_bias",
        "metadata",
        "stream_options",
        "service_tier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "encoding_format",
        "reasoning_effort",
        "verbosity",
        "modalities",
        "include",
        "truncation",
    }
)
IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
IMAGE_TOKEN_BOUND = 2_500  # the dearest image of any reachable model, in its prompt tokens
# Where an image part keeps its image (a URL, base64 data or a file id) and its detail level.
_IMAGE_FIELDS = frozenset({"image_url", "source", "file_id", "detail"})
# A longer ``type`` is not a kind name but content, and is counted.
_MAX_FRAMING_CHARS = 64

_encoder = msgspec.json.Encoder()


def json_size(value: Any) -> int:
    """The UTF-8 size of ``value`` as JSON (0 for null: a null field is an absent one)."""
    if value is None:
        return 0
    try:
        return len(_encoder.encode(value))
    except (msgspec.EncodeError, TypeError, OverflowError):
        return len(repr(value).encode("utf-8", "surrogatepass"))  # not JSON data: still sized


def field_size(key: str, value: Any) -> int:
    """``"key":value`` as JSON; 0 for a null value."""
    if value is None:
        return 0
    return len(key.encode("utf-8", "surrogatepass")) + 3 + json_size(value)


def rest_of(
    mapping: Mapping[str, Any], text_keys: Collection[str] = (), walked: Collection[str] = ()
) -> int:
    """The size of ``mapping``'s fields other than its framing ``type``, the keys in
    ``text_keys`` whose value is a string (that text is counted as text) and the keys in
    ``walked`` (the caller counts their parts)."""
    total = 0
    for key, value in mapping.items():
        if key in walked:
            continue
        if isinstance(value, str) and (key in text_keys or _is_framing(key, value)):
            continue
        total += field_size(str(key), value)
    return total


def top_level_rest(body: Mapping[str, Any], counted: Collection[str]) -> int:
    """The body's fields beyond ``counted`` (walked by the prompt count) and parameters."""
    total = 0
    for key, value in body.items():
        if key in counted or key in PARAMETERS:
            continue
        if value is None or isinstance(value, bool | int | float):
            continue  # a sampling or limit parameter, never prompt content
        total += field_size(str(key), value)
    return total


def part_rest(part: Any) -> int:
    """A content part beyond its text: the whole part when it has no text; an image part's
    bound and its other fields (its image's bytes are not what the upstream prices)."""
    if not isinstance(part, Mapping):
        return json_size(part)
    kind = part.get("type")
    if isinstance(kind, str) and kind in IMAGE_PART_TYPES:
        return IMAGE_TOKEN_BOUND + sum(
            field_size(str(key), value)
            for key, value in part.items()
            if key not in _IMAGE_FIELDS and not _is_framing(key, value)
        )
    return rest_of(part, ("text",))


def _is_framing(key: Any, value: Any) -> bool:
    return key == "type" and isinstance(value, str) and len(value) <= _MAX_FRAMING_CHARS
