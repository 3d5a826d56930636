"""The OpenAI chat fields beside messages and tools, as Bedrock's Converse API takes them.

No field is dropped without a decision: each top-level field of OpenAI's chat request is
translated, refused when it asks for something Converse cannot do, or dropped because
dropping it cannot change the answer (docs/api.md, "AWS Bedrock").

Translated: ``model`` (the URL's modelId), ``messages``, ``max_completion_tokens`` /
``max_tokens`` (``inferenceConfig.maxTokens``), ``temperature`` and ``top_p`` (0..1:
``inferenceConfig.temperature`` / ``topP``), ``stop`` (``stopSequences``), ``stream``
(ConverseStream), ``n`` (1 only), ``tools`` / ``tool_choice`` / ``parallel_tool_calls``
(true only) and ``response_format`` (``toolConfig``), ``reasoning_effort`` (Claude's
``thinking`` in ``additionalModelRequestFields``, planned as for Anthropic: left out and
listed as ignored where Claude would refuse it; a 400 on other models);
``stream_options`` is the gateway's own. ``verbosity`` is accepted and listed as ignored.

Refused with a 400 naming the field, unless it holds its default: ``logprobs``,
``top_logprobs``, ``logit_bias``, ``frequency_penalty``, ``presence_penalty``, ``audio``,
``modalities`` other than text, ``web_search_options``, ``moderation``, ``service_tier``
other than ``auto``/``default``, ``parallel_tool_calls: false`` (Converse cannot limit a
turn to one call), and the deprecated ``functions`` / ``function_call``.

Dropped, as they cannot change the answer: ``seed`` (Converse has none; best effort even
on OpenAI), ``store`` and ``metadata`` (OpenAI's stored completions), ``user`` and
``safety_identifier`` (abuse attribution only), ``prompt_cache_key``,
``prompt_cache_retention``, ``prompt_cache_options`` and ``prediction``.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import TranslationError
from gateway.upstream.chat_fields import (
    Default,
    absent,
    empty,
    max_tokens,
    no_functions,
    off,
    one_of,
    refuse_unless_default,
    text_only,
    zero,
)

DROPPED = frozenset(
    {
        "seed",
        "store",
        "metadata",
        "user",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "prompt_cache_options",
        "prediction",
    }
)


REFUSED_UNLESS_DEFAULT: dict[str, Default] = {
    "logprobs": off,
    "top_logprobs": zero,
    "logit_bias": empty,
    "frequency_penalty": zero,
    "presence_penalty": zero,
    "audio": absent,
    "modalities": text_only,
    "web_search_options": absent,
    "moderation": absent,
    "service_tier": one_of("auto", "default"),
    "parallel_tool_calls": one_of(True),
    "functions": no_functions,
    "function_call": absent,
}


def refuse_unsupported(body: dict[str, Any]) -> None:
    """A 400 for the first field that asks for something Converse cannot do."""
    refuse_unless_default(body, REFUSED_UNLESS_DEFAULT, "AWS Bedrock")


def inference_config(body: dict[str, Any], default_max_tokens: int | None) -> dict[str, Any]:
    """``inferenceConfig``: maxTokens, temperature, topP, stopSequences."""
    out: dict[str, Any] = {}
    length = max_tokens(body) or default_max_tokens
    if length is not None:
        out["maxTokens"] = length
    for field, name in (("temperature", "temperature"), ("top_p", "topP")):
        value = body.get(field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
            msg = f"{field} must be a number between 0 and 1 for this model (served by AWS Bedrock)"
            raise TranslationError(msg, field)
        out[name] = value
    stop = body.get("stop")
    if isinstance(stop, str):
        stop = [stop]
    if stop is not None:
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
            raise TranslationError("stop must be a non-empty string or an array of them", "stop")
        if stop:
            out["stopSequences"] = list(stop)
    return out
