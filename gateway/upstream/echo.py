"""The built-in demo adapter: answers locally, so the example config runs with no key.

It echoes the last user message (chat), the prompt (completions) or returns a
small deterministic vector (embeddings), with token counts from characters/4.
Its answers and stream chunks carry every field OpenAI's published schema
requires (``logprobs: null``, ``message.refusal: null``...), so a client library
that checks them finds nothing missing.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import msgspec

from gateway.domain.model import Endpoint
from gateway.domain.usage import Usage
from gateway.streaming.sse import encode_event
from gateway.upstream.base import UpstreamCall, UpstreamReply

_ENCODER = msgspec.json.Encoder()


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, list):
                return " ".join(
                    str(p.get("text", "")) for p in content if isinstance(p, dict)
                ).strip()
    return ""


def _prompt_text(body: dict[str, Any]) -> str:
    if "messages" in body:
        return " ".join(str(m.get("content", "")) for m in body["messages"] if isinstance(m, dict))
    prompt = body.get("prompt", body.get("input", ""))
    if prompt is None:  # a null prompt: the model starts a new document
        return ""
    return prompt if isinstance(prompt, str) else " ".join(map(str, prompt))


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


def _envelope(obj: str, ident: str, created: int, model: str) -> dict[str, Any]:
    return {"id": ident, "object": obj, "created": created, "model": model}


def chat_answer(model: str, text: str, usage: Usage, ident: str, created: int) -> dict[str, Any]:
    """A whole chat.completion."""
    message = {"role": "assistant", "content": text, "refusal": None}
    choice = {"index": 0, "message": message, "logprobs": None, "finish_reason": "stop"}
    return {
        **_envelope("chat.completion", ident, created, model),
        "choices": [choice],
        "usage": _usage_dict(usage),
    }


def completion_answer(
    model: str, text: str, usage: Usage, ident: str, created: int
) -> dict[str, Any]:
    """A whole text_completion."""
    choice = {"index": 0, "text": text, "logprobs": None, "finish_reason": "stop"}
    return {
        **_envelope("text_completion", ident, created, model),
        "choices": [choice],
        "usage": _usage_dict(usage),
    }


def embedding_answer(model: str, inputs: Any) -> dict[str, Any]:
    items = [inputs] if isinstance(inputs, str) else list(inputs)
    prompt_tokens = _tokens(" ".join(map(str, items)))
    data = [
        {"object": "embedding", "index": i, "embedding": _vector(str(item))}
        for i, item in enumerate(items)
    ]
    usage = {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens}
    return {"object": "list", "data": data, "model": model, "usage": usage}


def stream_chunks(
    chat: bool, model: str, text: str, usage: Usage | None, ident: str, created: int
) -> Iterator[dict[str, Any]]:
    """The chunks of a streamed answer: one per word, the finish, then usage if asked."""
    obj = "chat.completion.chunk" if chat else "text_completion"

    def chunk(piece: str | None, finish: str | None, first: bool = False) -> dict[str, Any]:
        choice: dict[str, Any]
        if chat:
            delta: dict[str, Any] = {"role": "assistant"} if first else {}
            if piece is not None:
                delta["content"] = piece
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        else:
            choice = {"index": 0, "text": piece or "", "logprobs": None, "finish_reason": finish}
        return {**_envelope(obj, ident, created, model), "choices": [choice]}

    for i, word in enumerate(text.split(" ")):
        yield chunk(word if i == 0 else " " + word, None, first=i == 0)
    yield chunk(None, "stop")
    if usage is not None:
        yield {**_envelope(obj, ident, created, model), "choices": [], "usage": _usage_dict(usage)}


class EchoAdapter:
    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        name = call.model.name
        if call.endpoint is Endpoint.EMBEDDINGS:
            body = embedding_answer(name, call.body["input"])
            usage = Usage(body["usage"]["prompt_tokens"], 0)
            return UpstreamReply(body, usage, name)
        text = self._answer(call)
        usage = Usage(_tokens(_prompt_text(call.body)), _tokens(text))
        build = completion_answer if call.endpoint is Endpoint.COMPLETIONS else chat_answer
        body = build(name, text, usage, _ident(), int(time.time()))
        return UpstreamReply(body, usage, name)

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        return self._stream(call, ask_usage)

    async def _stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        text = self._answer(call)
        usage = Usage(_tokens(_prompt_text(call.body)), _tokens(text)) if ask_usage else None
        chat = call.endpoint is Endpoint.CHAT
        for chunk in stream_chunks(chat, call.model.name, text, usage, _ident(), int(time.time())):
            yield encode_event(_ENCODER.encode(chunk))
        yield encode_event(b"[DONE]")

    @staticmethod
    def _answer(call: UpstreamCall) -> str:
        if call.endpoint is Endpoint.COMPLETIONS:
            return f"echo: {_prompt_text(call.body)}"
        return f"echo: {_last_user_text(call.body)}"


def _ident() -> str:
    return f"echo-{uuid.uuid4().hex[:24]}"


def _vector(text: str, size: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [round((b - 128) / 128, 6) for b in digest[:size]]
