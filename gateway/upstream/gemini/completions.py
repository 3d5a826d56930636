"""Legacy ``/v1/completions`` through the chat translation (pure).

The prompt becomes one user message; the chat answer (whole or streamed) becomes a
``text_completion``. ``suffix``, ``echo``, ``logprobs``, ``best_of`` other than 1 and
``logit_bias`` have no Gemini counterpart and are refused; the sampling fields pass to
the chat translation as they are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gateway.domain.errors import TranslationError

_PASSED = (
    "max_tokens",
    "temperature",
    "top_p",
    "stop",
    "seed",
    "n",
    "presence_penalty",
    "frequency_penalty",
    "stream",
    "stream_options",
    "user",
)
_REFUSED: dict[str, Callable[[Any], bool]] = {
    "suffix": lambda v: v is None or v == "",
    "echo": lambda v: v is None or v is False,
    "logprobs": lambda v: v is None,
    "best_of": lambda v: v is None or v == 1,
    "logit_bias": lambda v: v is None or v == {},
}


def completion_to_chat(body: dict[str, Any], provider: str = "Gemini") -> dict[str, Any]:
    """``provider``: who serves the model, named in a refusal (Bedrock uses this too)."""
    for field, is_default in _REFUSED.items():
        if not is_default(body.get(field)):
            raise TranslationError(
                f"'{field}' is not supported for completions by this model (served by {provider})",
                field,
            )
    prompt = body.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1:
        prompt = prompt[0]
    if not isinstance(prompt, str) or not prompt:
        raise TranslationError(
            f"prompt must be one non-empty string for this model (served by {provider})",
            "prompt",
        )
    chat: dict[str, Any] = {"messages": [{"role": "user", "content": prompt}]}
    for field in _PASSED:
        if body.get(field) is not None:
            chat[field] = body[field]
    return chat


def chat_to_completion(chat: dict[str, Any]) -> dict[str, Any]:
    """A chat.completion (or one of its chunks) as a text_completion (or its chunk)."""
    choices = []
    for choice in chat.get("choices") or []:
        message = choice.get("message") or choice.get("delta") or {}
        text = message.get("content") or message.get("refusal") or ""
        choices.append(
            {
                "index": choice.get("index", 0),
                "text": text,
                "logprobs": None,
                "finish_reason": choice.get("finish_reason"),
            }
        )
    out: dict[str, Any] = {
        "id": str(chat.get("id", "")).replace("chatcmpl-", "cmpl-", 1),
        "object": "text_completion",
        "created": chat.get("created"),
        "model": chat.get("model"),
        "choices": choices,
    }
    if "usage" in chat:
        out["usage"] = chat["usage"]
    return out
