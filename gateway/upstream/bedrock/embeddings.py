"""OpenAI embeddings as Bedrock InvokeModel bodies for Titan and Cohere (pure).

Amazon Titan Text Embeddings (``amazon.titan-embed-text-v1``, ``-v2:0``) take one text a
call, ``{"inputText", "dimensions"?}``, answering ``{"embedding", "inputTextTokenCount"}``
(the adapter makes a few calls at once). Cohere Embed (``cohere.embed-…``) takes up to 96
texts a call, more going in several: ``{"texts", "input_type": "search_document"}``,
answering ``{"embeddings": [[...]]}`` with the token count in the
``X-Amzn-Bedrock-Input-Token-Count`` header. ``dimensions`` is Titan v2's;
``encoding_format`` ``base64`` is packed here as OpenAI does (little-endian float32).
Token arrays and Cohere ``dimensions`` are refused naming the field.
"""

from __future__ import annotations

import base64
import struct
from typing import Any, Literal

from gateway.domain.errors import TranslationError

Family = Literal["titan", "cohere"]
COHERE_MAX_TEXTS = 96


def family(model_name: str) -> Family:
    if "titan-embed" in model_name:
        return "titan"
    if "cohere.embed" in model_name:
        return "cohere"
    raise TranslationError(
        "embeddings through AWS Bedrock are translated for Amazon Titan "
        "(amazon.titan-embed-…) and Cohere (cohere.embed-…) models only",
        "model",
    )


def inputs(body: dict[str, Any]) -> list[str]:
    value = body.get("input")
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or not all(isinstance(t, str) for t in texts):
        raise TranslationError(
            "input must be a string or an array of strings for this model (served by AWS "
            "Bedrock); token arrays are not taken",
            "input",
        )
    return texts


def encoding(body: dict[str, Any]) -> str:
    value = body.get("encoding_format") or "float"
    if value not in ("float", "base64"):
        raise TranslationError("encoding_format must be 'float' or 'base64'", "encoding_format")
    return str(value)


def titan_bodies(body: dict[str, Any], texts: list[str]) -> list[dict[str, Any]]:
    dimensions = body.get("dimensions")
    if dimensions is not None and (isinstance(dimensions, bool) or not isinstance(dimensions, int)):
        raise TranslationError("dimensions must be an integer", "dimensions")
    out: list[dict[str, Any]] = []
    for text in texts:
        request: dict[str, Any] = {"inputText": text}
        if dimensions is not None:
            request["dimensions"] = dimensions
        out.append(request)
    return out


def cohere_bodies(body: dict[str, Any], texts: list[str]) -> list[dict[str, Any]]:
    """One body per 96 texts (Cohere's most a call), in input order."""
    if body.get("dimensions") is not None:
        raise TranslationError(
            "dimensions is not supported by Cohere embeddings on AWS Bedrock", "dimensions"
        )
    return [
        {"texts": texts[i : i + COHERE_MAX_TEXTS], "input_type": "search_document"}
        for i in range(0, len(texts), COHERE_MAX_TEXTS)
    ]


def vector(value: Any) -> list[float] | None:
    if isinstance(value, list) and all(
        isinstance(x, int | float) and not isinstance(x, bool) for x in value
    ):
        return [float(x) for x in value]
    return None


def openai_embeddings(
    vectors: list[list[float]], model: str, prompt_tokens: int, encoding_format: str
) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": i, "embedding": _encoded(v, encoding_format)}
        for i, v in enumerate(vectors)
    ]
    usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}


def _encoded(values: list[float], encoding_format: str) -> list[float] | str:
    if encoding_format == "float":
        return values
    return base64.b64encode(struct.pack(f"<{len(values)}f", *values)).decode("ascii")
