"""What the fake Gemini (:mod:`tests.support.fake_gemini`) answers: the replies a test
scripts (:class:`Turn`, :class:`Blocked`, :class:`Failure`), a stream as Gemini sends it
over SSE, the embeddings of batchEmbedContents and Vertex's predict, and errors in
Google's shape (``google.rpc.Status``, with RetryInfo or Retry-After).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Turn:
    parts: list[dict[str, Any]] = field(default_factory=lambda: [{"text": "Hello from Gemini."}])
    finish: str = "STOP"
    usage: dict[str, int] = field(
        default_factory=lambda: {"promptTokenCount": 10, "candidatesTokenCount": 5}
    )
    safety_ratings: list[dict[str, Any]] | None = None


@dataclass
class Blocked:
    reason: str = "SAFETY"
    usage: dict[str, int] = field(default_factory=lambda: {"promptTokenCount": 7})


@dataclass
class Failure:
    status: int
    google_status: str
    message: str = "fake failure"
    retry_delay: str | None = None  # RetryInfo.retryDelay, e.g. "1s"
    retry_after: str | None = None  # the Retry-After header


Reply = Turn | Blocked | Failure


def predictions(body: dict[str, Any]) -> dict[str, Any]:
    size = body.get("parameters", {}).get("outputDimensionality", 3)
    return {
        "predictions": [
            {
                "embeddings": {
                    "values": [round(len(i["content"]) / (k + 1), 3) for k in range(size)],
                    "statistics": {"token_count": len(i["content"]), "truncated": False},
                }
            }
            for i in body["instances"]
        ]
    }


def error_answer(status: int, google_status: str, message: str, **extra: Any) -> web.Response:
    error: dict[str, Any] = {"code": status, "message": message, "status": google_status}
    error.update(extra)
    return web.json_response({"error": error}, status=status)


def failure_answer(failure: Failure) -> web.Response:
    extra: dict[str, Any] = {}
    if failure.retry_delay is not None:
        extra["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": failure.retry_delay}
        ]
    response = error_answer(failure.status, failure.google_status, failure.message, **extra)
    if failure.retry_after is not None:
        response.headers["retry-after"] = failure.retry_after
    return response


def embeddings(body: dict[str, Any]) -> dict[str, Any]:
    out = []
    for request in body["requests"]:
        text = "".join(p.get("text", "") for p in request["content"]["parts"])
        size = request.get("outputDimensionality", 3)
        out.append({"values": [round(len(text) / (k + 1), 3) for k in range(size)]})
    return {"embeddings": out}


async def sse_answer(
    request: web.Request, reply: Turn | Blocked, answer: dict[str, Any]
) -> web.StreamResponse:
    """The answer as Gemini streams it: text in word pieces, each call whole, the
    finishReason and the full usage on the last chunk (earlier ones carry the prompt's)."""
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    send: Callable[[dict[str, Any]], Any] = lambda chunk: response.write(  # noqa: E731
        b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n"
    )
    if isinstance(reply, Blocked):
        await send(answer)
        await response.write_eof()
        return response
    candidate = answer["candidates"][0]
    pieces: list[dict[str, Any]] = []
    for part in candidate["content"]["parts"]:
        if "text" in part and "thoughtSignature" not in part and not part.get("thought"):
            words = re.findall(r"\S+\s*", part["text"]) or [part["text"]]
            pieces.extend({"text": w} for w in words)
        else:
            pieces.append(part)
    base = {"modelVersion": answer["modelVersion"], "responseId": answer["responseId"]}
    prompt_usage = {"promptTokenCount": answer["usageMetadata"].get("promptTokenCount", 0)}
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        chunk_candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [piece]},
            "index": 0,
        }
        if last:
            chunk_candidate["finishReason"] = candidate["finishReason"]
            if "safetyRatings" in candidate:
                chunk_candidate["safetyRatings"] = candidate["safetyRatings"]
        usage = answer["usageMetadata"] if last else prompt_usage
        await send({"candidates": [chunk_candidate], "usageMetadata": usage, **base})
    if not pieces:
        ending = {
            "content": {"role": "model", "parts": []},
            "finishReason": candidate["finishReason"],
        }
        await send({"candidates": [ending], "usageMetadata": answer["usageMetadata"], **base})
    await response.write_eof()
    return response
