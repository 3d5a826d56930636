"""OpenAI embeddings as Vertex AI's ``:predict`` on a Google embedding model (pure).

``{"instances": [{"content": text}, ...], "parameters": {"outputDimensionality": n}}``
in, ``{"predictions": [{"embeddings": {"values": [...], "statistics": {"token_count":
n}}}]}`` out; the token counts are the call's usage. The checks on the request are the
Gemini translation's.
"""

from __future__ import annotations

from typing import Any

from gateway.upstream.gemini.embeddings import embed_request, from_embed_response


def predict_request(body: dict[str, Any], model_name: str) -> dict[str, Any]:
    requests = embed_request(body, model_name)["requests"]
    out: dict[str, Any] = {
        "instances": [{"content": r["content"]["parts"][0]["text"]} for r in requests]
    }
    dimensions = body.get("dimensions")
    if dimensions is not None:
        out["parameters"] = {"outputDimensionality": dimensions}
    return out


def from_predict_response(
    resp: dict[str, Any], model: str, encoding_format: Any
) -> dict[str, Any] | None:
    predictions = resp.get("predictions")
    if not isinstance(predictions, list):
        return None
    embeddings: list[Any] = []
    tokens = 0
    for prediction in predictions:
        found = prediction.get("embeddings") if isinstance(prediction, dict) else None
        if not isinstance(found, dict):
            return None
        embeddings.append({"values": found.get("values")})
        statistics = found.get("statistics")
        count = statistics.get("token_count") if isinstance(statistics, dict) else None
        if isinstance(count, int | float) and not isinstance(count, bool):
            tokens += int(count)
    usage = {"promptTokenCount": tokens}
    return from_embed_response(
        {"embeddings": embeddings, "usageMetadata": usage}, model, encoding_format
    )
