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

from collections.abc import Callable
from typing import Any

from gateway.domain.errors import TranslationError

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


def _off(value: Any) -> bool:
    return value is None or value is False


def _zero(value: Any) -> bool:
    return value is None or (value == 0 and not isinstance(value, bool))


def _one_of(*defaults: Any) -> Callable[[Any], bool]:
    return lambda value: value is None or value in defaults


REFUSED_UNLESS_DEFAULT: dict[str, Callable[[Any], bool]] = {
    "logprobs": _off,
    "top_logprobs": _zero,
    "logit_bias": lambda value: value is None or value == {},
    "frequency_penalty": _zero,
    "presence_penalty": _zero,
    "audio": lambda value: value is None,
    "modalities": lambda value: value is None or value == ["text"],
    "web_search_options": lambda value: value is None,
    "moderation": lambda value: value is None,
    "service_tier": _one_of("auto", "default"),
    "parallel_tool_calls": _one_of(True),
    "functions": lambda value: value is None or value == [],
    "function_call": lambda value: value is None,
}


def refuse_unsupported(body: dict[str, Any]) -> None:
    """A 400 for the first field that asks for something Converse cannot do."""
    for field, is_default in REFUSED_UNLESS_DEFAULT.items():
        if not is_default(body.get(field)):
            raise TranslationError(
                f"'{field}' is not supported by this model (served by AWS Bedrock); "
                "leave it out or use a model of another provider",
                field,
            )


def inference_config(body: dict[str, Any], default_max_tokens: int | None) -> dict[str, Any]:
    """``inferenceConfig``: maxTokens, temperature, topP, stopSequences."""
    out: dict[str, Any] = {}
    max_tokens = _max_tokens(body, default_max_tokens)
    if max_tokens is not None:
        out["maxTokens"] = max_tokens
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


def _max_tokens(body: dict[str, Any], default: int | None) -> int | None:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TranslationError(f"{key} must be a positive integer", key)
        return value
    return default
