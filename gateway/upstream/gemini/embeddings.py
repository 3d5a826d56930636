"""OpenAI embeddings requests as Gemini ``batchEmbedContents``, and the answer back (pure).

Every input (a string or an array of strings) is one request of the batch, in order;
``dimensions`` is ``outputDimensionality``; ``encoding_format: base64`` (the openai SDK's
default) packs the values as little-endian float32, as OpenAI does. Token arrays cannot
be sent (Gemini takes text only) and are refused; ``user`` is dropped (no counterpart).
"""

from __future__ import annotations

import base64
import struct
from typing import Any

from gateway.domain.errors import TranslationError

_FIELDS = frozenset({"model", "input", "encoding_format", "dimensions", "user"})


def embed_request(body: dict[str, Any], model_name: str) -> dict[str, Any]:
    for field in body:
        if field not in _FIELDS:
            raise TranslationError(
                f"'{field}' is not supported for embeddings by this model (served by Gemini)",
                field,
            )
    raw = body.get("input")
    texts = [raw] if isinstance(raw, str) else raw
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise TranslationError(
            "input must be a string or an array of strings for this model (served by "
            "Gemini, which takes no token arrays)",
            "input",
        )
    encoding = body.get("encoding_format")
    if encoding not in (None, "float", "base64"):
        raise TranslationError("encoding_format must be 'float' or 'base64'", "encoding_format")
    dimensions = body.get("dimensions")
    if dimensions is not None and (
        isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
    ):
        raise TranslationError("dimensions must be a positive integer", "dimensions")
    name = model_name if model_name.startswith("models/") else f"models/{model_name}"
    requests: list[dict[str, Any]] = []
    for text in texts:
        request: dict[str, Any] = {"model": name, "content": {"parts": [{"text": text}]}}
        if dimensions is not None:
            request["outputDimensionality"] = dimensions
        requests.append(request)
    return {"requests": requests}


def from_embed_response(
    resp: dict[str, Any], model: str, encoding_format: Any
) -> dict[str, Any] | None:
    """The OpenAI embeddings list, or None when the answer holds no embeddings."""
    embeddings = resp.get("embeddings")
    if not isinstance(embeddings, list) or not embeddings:
        return None
    data: list[dict[str, Any]] = []
    for index, item in enumerate(embeddings):
        values = item.get("values") if isinstance(item, dict) else None
        if not isinstance(values, list) or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in values
        ):
            return None
        vector: Any = values
        if encoding_format == "base64":
            vector = base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode()
        data.append({"object": "embedding", "index": index, "embedding": vector})
    out: dict[str, Any] = {"object": "list", "data": data, "model": model}
    meta = resp.get("usageMetadata")
    prompt = meta.get("promptTokenCount") if isinstance(meta, dict) else None
    if isinstance(prompt, int) and not isinstance(prompt, bool):
        out["usage"] = {"prompt_tokens": prompt, "total_tokens": prompt}
    return out
