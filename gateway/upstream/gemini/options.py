"""The OpenAI chat fields beside messages and tools, as Gemini's ``generationConfig`` (pure).

No field is dropped without a decision: each top-level field of OpenAI's chat request is
translated, refused when it asks for something the Gemini API cannot do, or dropped because
dropping it cannot change the answer.

Translated: ``model`` (in the URL), ``messages``, ``max_completion_tokens``/``max_tokens``
(``maxOutputTokens``), ``temperature``, ``top_p`` (``topP``), ``stop`` (``stopSequences``,
at most 5), ``seed``, ``presence_penalty``/``frequency_penalty``, ``n`` (1 only),
``reasoning_effort`` (``thinkingConfig``: a ``thinkingLevel`` for gemini-3 models, a
``thinkingBudget`` for the others, and ``includeThoughts`` unless it is ``none``: the
thought summaries are answered as ``reasoning_content``), ``response_format``
(``responseMimeType`` and ``responseJsonSchema``), ``tools``/``tool_choice``
(``tools.functionDeclarations``, ``toolConfig.functionCallingConfig``),
``parallel_tool_calls: false`` (only the first call of an answer is returned), ``stream``
(the ``streamGenerateContent`` method);
``stream_options.include_usage`` is the gateway's own.

Refused with a 400 naming the field, unless it holds its default: ``logprobs``,
``top_logprobs``, ``logit_bias``, ``audio``, ``modalities`` other than text,
``web_search_options``, ``moderation``,
``service_tier`` other than ``auto``/``default``, and the deprecated
``functions``/``function_call``.

Accepted and listed as ignored (the ``x-gateway-ignored-params`` header): ``verbosity``
(it shapes style only, and Gemini has no such setting).

Dropped, as they cannot change the answer: ``user`` and ``safety_identifier`` (the Gemini
API takes no end-user id), ``store`` and ``metadata`` (OpenAI's stored-completions
dashboard), ``prompt_cache_key``, ``prompt_cache_retention`` and ``prompt_cache_options``
(cache hit rates only), ``prediction`` (latency only).
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

MAX_STOP_SEQUENCES = 5

TRANSLATED = frozenset(
    {
        "model",
        "messages",
        "max_completion_tokens",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "seed",
        "presence_penalty",
        "frequency_penalty",
        "n",
        "reasoning_effort",
        "response_format",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "stream",
        "stream_options",
    }
)
DROPPED = frozenset(
    {
        "user",
        "safety_identifier",
        "store",
        "metadata",
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
    "audio": absent,
    "modalities": text_only,
    "web_search_options": absent,
    "moderation": absent,
    "service_tier": one_of("auto", "default"),
    "functions": no_functions,
    "function_call": absent,
}

# reasoning_effort -> thinkingBudget (gemini-2.x) and thinkingLevel (gemini-3 and later).
THINKING_BUDGETS = {"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576}
THINKING_LEVELS = {
    "none": "minimal",  # a gemini-3 model cannot turn thinking off: its least
    "minimal": "minimal",
    "low": "low",
    "medium": "medium",
    "high": "high",
}


def refuse_unsupported(body: dict[str, Any]) -> None:
    """A 400 for the first field that asks for something the Gemini API cannot do."""
    refuse_unless_default(body, REFUSED_UNLESS_DEFAULT, "Gemini")
    n = body.get("n")
    if n is not None and n != 1:
        raise TranslationError("only n=1 is supported for this model (served by Gemini)", "n")


def _number(body: dict[str, Any], key: str) -> float | int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TranslationError(f"{key} must be a number", key)
    return value


def generation_config(body: dict[str, Any], model_name: str) -> dict[str, Any]:
    """``generationConfig`` for the sampling, length, stop, seed and thinking fields."""
    out: dict[str, Any] = {}
    length = max_tokens(body)
    if length is not None:
        out["maxOutputTokens"] = length
    for key, name in (
        ("temperature", "temperature"),
        ("top_p", "topP"),
        ("presence_penalty", "presencePenalty"),
        ("frequency_penalty", "frequencyPenalty"),
    ):
        value = _number(body, key)
        if value is not None:
            out[name] = value
    seed = body.get("seed")
    if seed is not None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TranslationError("seed must be an integer", "seed")
        out["seed"] = seed
    stops = _stop_sequences(body.get("stop"))
    if stops:
        out["stopSequences"] = stops
    thinking = thinking_config(body.get("reasoning_effort"), model_name)
    if thinking is not None:
        out["thinkingConfig"] = thinking
    return out


def _stop_sequences(stop: Any) -> list[str]:
    if stop is None:
        return []
    stops = [stop] if isinstance(stop, str) else stop
    if not isinstance(stops, list) or not all(isinstance(s, str) for s in stops):
        raise TranslationError("stop must be a string or an array of strings", "stop")
    if len(stops) > MAX_STOP_SEQUENCES:
        raise TranslationError(
            f"at most {MAX_STOP_SEQUENCES} stop sequences for this model (served by Gemini)",
            "stop",
        )
    return [s for s in stops if s]


def thinking_config(effort: Any, model_name: str) -> dict[str, Any] | None:
    """reasoning_effort as a ``thinkingConfig``: gemini-3 (and later) models take a
    ``thinkingLevel``, the 2.x models a ``thinkingBudget`` (0 turns thinking off)."""
    if effort is None:
        return None
    if effort not in THINKING_BUDGETS:
        allowed = ", ".join(THINKING_BUDGETS)
        raise TranslationError(
            f"reasoning_effort must be one of {allowed} for this model (served by Gemini)",
            "reasoning_effort",
        )
    # Asked to think, it sends its thought summaries too (answered as reasoning_content).
    summaries = {"includeThoughts": True} if effort != "none" else {}
    if levelled(model_name):
        return {"thinkingLevel": THINKING_LEVELS[effort], **summaries}
    return {"thinkingBudget": THINKING_BUDGETS[effort], **summaries}


def levelled(model_name: str) -> bool:
    """A gemini-3 (or later) model: thinking levels, and signed function calls required."""
    name = model_name.removeprefix("models/")
    if not name.startswith("gemini-"):
        return False
    major = name.removeprefix("gemini-").split("-", 1)[0].split(".", 1)[0]
    return major.isdigit() and int(major) >= 3
