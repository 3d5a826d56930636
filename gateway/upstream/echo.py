"""The built-in demo adapter: answers locally, so the example config runs with no key.

It echoes the last user message (chat), the prompt (completions) or returns a
small deterministic vector (embeddings), with token counts from characters/4.
"""

from __future__ import annotations

import hashlib
import math
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import msgspec

from gateway.domain.usage import Usage
from gateway.inbound import Endpoint
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
    return prompt if isinstance(prompt, str) else " ".join(map(str, prompt))


def _usage_dict(usage: Usage) -> dict[str, int]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.input_tokens + usage.output_tokens,
    }


class EchoAdapter:
    async def complete(self, call: UpstreamCall) -> UpstreamReply:
        prompt_tokens = _tokens(_prompt_text(call.body))
        created = int(time.time())
        if call.endpoint is Endpoint.EMBEDDINGS:
            inputs = call.body["input"]
            items = [inputs] if isinstance(inputs, str) else list(inputs)
            data = [
                {"object": "embedding", "index": i, "embedding": _vector(str(item))}
                for i, item in enumerate(items)
            ]
            usage = Usage(prompt_tokens, 0)
            body: dict[str, Any] = {
                "object": "list",
                "data": data,
                "model": call.model.name,
                "usage": {"prompt_tokens": prompt_tokens, "total_tokens": prompt_tokens},
            }
            return UpstreamReply(body, usage, call.model.name)
        text = self._answer(call)
        usage = Usage(prompt_tokens, _tokens(text))
        if call.endpoint is Endpoint.COMPLETIONS:
            choice: dict[str, Any] = {"index": 0, "text": text, "finish_reason": "stop"}
            obj = "text_completion"
        else:
            choice = {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
            }
            obj = "chat.completion"
        body = {
            "id": f"echo-{uuid.uuid4().hex[:24]}",
            "object": obj,
            "created": created,
            "model": call.model.name,
            "choices": [choice],
            "usage": _usage_dict(usage),
        }
        return UpstreamReply(body, usage, call.model.name)

    async def open_stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        return self._stream(call, ask_usage)

    async def _stream(self, call: UpstreamCall, ask_usage: bool) -> AsyncIterator[bytes]:
        text = self._answer(call)
        usage = Usage(_tokens(_prompt_text(call.body)), _tokens(text))
        ident = f"echo-{uuid.uuid4().hex[:24]}"
        created = int(time.time())
        chat = call.endpoint is Endpoint.CHAT
        obj = "chat.completion.chunk" if chat else "text_completion"

        def chunk(piece: str | None, finish: str | None) -> bytes:
            if chat:
                delta: dict[str, Any] = {"content": piece} if piece is not None else {}
                choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
            else:
                choice = {"index": 0, "text": piece or "", "finish_reason": finish}
            payload = {
                "id": ident,
                "object": obj,
                "created": created,
                "model": call.model.name,
                "choices": [choice],
            }
            return encode_event(_ENCODER.encode(payload))

        words = text.split(" ")
        for i, word in enumerate(words):
            yield chunk(word if i == 0 else " " + word, None)
        yield chunk(None, "stop")
        if ask_usage:
            payload = {
                "id": ident,
                "object": obj,
                "created": created,
                "model": call.model.name,
                "choices": [],
                "usage": _usage_dict(usage),
            }
            yield encode_event(_ENCODER.encode(payload))
        yield encode_event(b"[DONE]")

    @staticmethod
    def _answer(call: UpstreamCall) -> str:
        if call.endpoint is Endpoint.COMPLETIONS:
            return f"echo: {_prompt_text(call.body)}"
        return f"echo: {_last_user_text(call.body)}"


def _vector(text: str, size: int = 8) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [round((b - 128) / 128, 6) for b in digest[:size]]
