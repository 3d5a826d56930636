"""The OpenAI chat fields beside messages and tools, as Anthropic's Messages API takes them.

No field is dropped without a decision: each top-level field of OpenAI's chat
request is translated, refused when it asks for something Claude cannot do, or
dropped because dropping it cannot change the answer.

Translated: ``model``, ``messages``, ``max_completion_tokens``/``max_tokens``,
``temperature`` (0..1 on Anthropic: above 1 is refused), ``top_p``, ``stop``
(``stop_sequences``), ``stream``, ``safety_identifier`` or else ``user``
(``metadata.user_id``: both identify the end user for abuse detection),
``service_tier`` (``auto`` as is, ``default`` as ``standard_only``), ``n`` (1 only),
``tools``/``tool_choice``/``parallel_tool_calls`` and ``response_format`` (in
``tools``); ``stream_options.include_usage`` is the gateway's own.

Refused with a 400 naming the field, unless it holds its default: ``logprobs``,
``top_logprobs``, ``logit_bias``, ``frequency_penalty``, ``presence_penalty``,
``audio``, ``modalities`` other than text, ``web_search_options``, ``moderation``,
and the deprecated ``functions``/``function_call`` (use ``tools``/``tool_choice``).

``reasoning_effort`` is extended thinking (thinking.py). ``verbosity`` shapes style only
and Claude has no such setting: it is left out and listed as ignored (translate.py).

Dropped, as they cannot change the answer: ``seed`` (best effort even on OpenAI,
and deprecated there; Claude has none), ``store`` and ``metadata`` (OpenAI's
stored-completions dashboard), ``prompt_cache_key``, ``prompt_cache_retention``
and ``prompt_cache_options`` (cache hit rates only), ``prediction`` (latency
only), ``stream_options.include_obfuscation`` (padding of stream chunks).

Inside ``messages``: a participant's ``name`` is dropped (Claude has no author per
message; the content is kept), an assistant's ``refusal`` is kept as its text,
and an assistant's ``function_call`` or ``audio`` is refused.
"""

from __future__ import annotations

from typing import Any

from gateway.domain.errors import TranslationError
from gateway.upstream.chat_fields import (
    Default,
    absent,
    empty,
    no_functions,
    off,
    refuse_unless_default,
    text_only,
    zero,
)

TRANSLATED = frozenset(
    {
        "model",
        "messages",
        "max_completion_tokens",
        "max_tokens",
        "temperature",
        "top_p",
        "stop",
        "stream",
        "stream_options",
        "safety_identifier",
        "user",
        "service_tier",
        "n",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "response_format",
        "reasoning_effort",
        "verbosity",
    }
)
DROPPED = frozenset(
    {
        "seed",
        "store",
        "metadata",
        "prompt_cache_key",
        "prompt_cache_retention",
        "prompt_cache_options",
        "prediction",
    }
)


# Field -> whether the value asks for nothing Claude lacks.
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
    "functions": no_functions,
    "function_call": absent,
}

_SERVICE_TIERS = {"auto": "auto", "default": "standard_only"}


def refuse_unsupported(body: dict[str, Any]) -> None:
    """A 400 for the first field that asks for something Claude cannot do."""
    refuse_unless_default(body, REFUSED_UNLESS_DEFAULT, "Anthropic")


def copy_options(body: dict[str, Any], out: dict[str, Any]) -> None:
    """Sampling, stop sequences, the end-user id and the service tier."""
    temperature = body.get("temperature")
    if (
        isinstance(temperature, int | float)
        and not isinstance(temperature, bool)
        and temperature > 1
    ):
        msg = "temperature must be between 0 and 1 for this model (served by Anthropic)"
        raise TranslationError(msg, "temperature")
    for key in ("temperature", "top_p", "stream"):
        if body.get(key) is not None:
            out[key] = body[key]
    stop = body.get("stop")
    if isinstance(stop, str):
        out["stop_sequences"] = [stop]
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        if stop:
            out["stop_sequences"] = list(stop)
    elif stop is not None:
        raise TranslationError("stop must be a string or an array of strings", "stop")
    user_id = _user_id(body)
    if user_id:
        out["metadata"] = {"user_id": user_id}
    tier = body.get("service_tier")
    if tier is not None:
        if tier not in _SERVICE_TIERS:
            msg = "service_tier must be 'auto' or 'default' for this model (served by Anthropic)"
            raise TranslationError(msg, "service_tier")
        out["service_tier"] = _SERVICE_TIERS[tier]


def _user_id(body: dict[str, Any]) -> str | None:
    for key in ("safety_identifier", "user"):  # the newer field says the same, and wins
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            raise TranslationError(f"{key} must be a string", key)
        if value:
            return value
    return None
