"""A ``POST /v1/responses`` body as a Chat Completions body (pure).

Each top-level field of the Responses request is translated, refused (``Unsupported``,
naming the parameter) when it asks for something Chat Completions cannot do, or left out
when leaving it out cannot change the answer's meaning: silently when nothing is lost
(``store: false``, ``metadata``), else named in ``ignored`` (the caller's list, which
becomes the ``x-gateway-ignored-params`` header): ``text.verbosity`` (style only),
``client_metadata`` (OpenAI-side metadata), an offered built-in tool the provider cannot
run, extra output ``include`` asks for that has no counterpart. Fields that are not the
Responses API's are passed on, as a chat call passes them on: the upstream judges them.
The gateway keeps no conversation state, so what needs stored state is refused
(docs/responses.md).

``namespace`` tools (function tools grouped under a name, run by the client) become
chat functions named ``<namespace>__<name>``; ``namespaced_names`` gives the way back.
With ``thinking`` (a provider whose reasoning blocks can be sent back: Anthropic), a
``reasoning`` input item that carries one of the gateway's ``encrypted_content`` values
becomes ``thinking_blocks`` on the assistant message it preceded.

The top-level fields are read here; ``input`` (gateway/responses/input.py) and ``tools``
(gateway/responses/tools.py) each have their own module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gateway.responses.input import messages_of
from gateway.responses.tools import (
    NAMESPACE_SEPARATOR,
    chat_tool_choice,
    chat_tools,
    namespaced_names,
)
from gateway.responses.translation import Note, Unsupported

__all__ = [
    "ENCRYPTED_REASONING",
    "NAMESPACE_SEPARATOR",
    "Note",
    "Unsupported",
    "encrypted_reasoning_asked",
    "messages_of",
    "namespaced_names",
    "summary_asked",
    "to_chat",
]

# Copied to the chat body under the same name when not null.
_SAME_NAME = (
    "temperature",
    "top_p",
    "parallel_tool_calls",
    "user",
    "safety_identifier",
    "prompt_cache_key",
    "prompt_cache_retention",
    "service_tier",
)
# Read (translated, or checked and dropped) here: not passed on as they are.
_HANDLED = frozenset(
    {
        "model",
        "input",
        "instructions",
        "tools",
        "tool_choice",
        "text",
        "max_output_tokens",
        "stream",
        "stream_options",  # include_obfuscation only: nothing to obfuscate in a translation
        "reasoning",
        "metadata",  # the metadata of a stored response; nothing is stored (echoed back)
        "max_tool_calls",  # bounds built-in tool calls, which are never run
        "include",
        "client_metadata",  # OpenAI-side metadata of the client: left out, listed
        *_SAME_NAME,
    }
)
ENCRYPTED_REASONING = "reasoning.encrypted_content"
# ``include`` values refused: what they add would be the answer's content.
_INCLUDE_REFUSED = {"message.output_text.logprobs": "log probabilities are not translated"}
# Refused unless null: they name state stored at the provider.
_NEED_STATE = ("previous_response_id", "conversation")
# Refused unless null or their default value (and why).
_REFUSED_UNLESS_DEFAULT: dict[str, tuple[Any, str]] = {
    "background": (
        False,
        "background mode keeps a response to fetch later; the gateway keeps none",
    ),
    "store": (False, "the gateway stores no response (send store: false or leave it out)"),
    "prompt": (None, "stored prompt templates live at OpenAI"),
    "truncation": ("disabled", "automatic truncation has no Chat Completions counterpart"),
    "top_logprobs": (0, "log probabilities are not translated"),
}
_ALL = frozenset({*_NEED_STATE, *_REFUSED_UNLESS_DEFAULT})


def to_chat(
    body: Mapping[str, Any],
    provider: str,
    *,
    thinking: bool = False,
    ignored: list[str] | None = None,
) -> dict[str, Any]:
    """The chat body for ``body``; ``provider`` (an id) is named in refusals. ``thinking``:
    the provider takes reasoning blocks back (see the module). The names of what is left
    out without a counterpart are appended to ``ignored``."""
    seen: list[str] = ignored if ignored is not None else []

    def note(name: str) -> None:
        if name not in seen:
            seen.append(name)

    _refuse_stateful(body, provider)
    chat: dict[str, Any] = {
        name: value for name, value in body.items() if name not in _HANDLED and name not in _ALL
    }
    chat["model"] = body.get("model")
    chat["messages"] = messages_of(body, thinking=thinking)
    if body.get("stream"):
        chat["stream"] = True
    for name in _SAME_NAME:
        if body.get(name) is not None:
            chat[name] = body[name]
    if body.get("max_output_tokens") is not None:
        chat["max_tokens"] = body["max_output_tokens"]
    chat.update(_tool_fields(body, provider, note))
    chat.update(_text(body.get("text"), note))
    if body.get("client_metadata") is not None:
        note("client_metadata")
    _include(body.get("include"), thinking, note)
    reasoning = body.get("reasoning")
    effort = _reasoning_effort(reasoning)
    if effort is not None:
        chat["reasoning_effort"] = effort
    if summary_asked(body) and not (thinking and effort not in (None, "none")):
        note("reasoning.summary")  # nothing returns reasoning text to summarise
    return chat


def _tool_fields(body: Mapping[str, Any], provider: str, note: Note) -> dict[str, Any]:
    """``tools`` and ``tool_choice`` of the chat body (either left out when empty)."""
    out: dict[str, Any] = {}
    tools = chat_tools(body.get("tools"), provider, note)
    if tools:
        out["tools"] = tools
    choice = chat_tool_choice(body.get("tool_choice"), provider)
    if choice == "required" and not tools:
        raise Unsupported(
            "tool_choice",
            f"'tool_choice' is 'required', but provider '{provider}' can run none of the "
            "offered tools (built-in tools run at OpenAI).",
        )
    if choice is not None and (tools or isinstance(choice, dict)):
        out["tool_choice"] = choice  # without tools, chat APIs refuse auto and none
    return out


def summary_asked(body: Mapping[str, Any]) -> bool:
    """``reasoning.summary`` (or its older name ``generate_summary``) is set."""
    reasoning = body.get("reasoning")
    if not isinstance(reasoning, dict):
        return False
    return any(reasoning.get(k) not in (None, "none") for k in ("summary", "generate_summary"))


def encrypted_reasoning_asked(body: Mapping[str, Any]) -> bool:
    include = body.get("include")
    return isinstance(include, list) and ENCRYPTED_REASONING in include


def _include(include: Any, thinking: bool, note: Note) -> None:
    """``include``: the encrypted reasoning is carried where the provider has reasoning
    blocks to carry (else listed); other extra output is listed, as the tools it is of
    are never run; log probabilities are refused."""
    if include is None:
        return
    if not isinstance(include, list):
        raise Unsupported("include", "'include' must be an array of strings.")
    for value in include:
        if value in _INCLUDE_REFUSED:
            raise Unsupported(
                "include",
                f"'include' asks for '{value}': {_INCLUDE_REFUSED[value]} by this translation.",
            )
        if value == ENCRYPTED_REASONING and thinking:
            continue
        note(f"include[{value}]")


def _refuse_stateful(body: Mapping[str, Any], provider: str) -> None:
    for name in _NEED_STATE:
        if body.get(name) is not None:
            raise Unsupported(
                name,
                f"'{name}' needs a stored conversation: the gateway keeps none, and provider "
                f"'{provider}' serves this model through Chat Completions. Send the whole "
                "conversation in 'input'.",
            )
    for name, (default, why) in _REFUSED_UNLESS_DEFAULT.items():
        value = body.get(name)
        if value is None or (value == default and type(value) is type(default)):
            continue
        raise Unsupported(name, f"'{name}' is not supported through provider '{provider}': {why}.")


def _text(text: Any, note: Note) -> dict[str, Any]:
    """``text.format`` as ``response_format``; ``text.verbosity`` (style only, and a field
    many chat upstreams reject) is left out and listed."""
    if text is None:
        return {}
    if not isinstance(text, dict):
        raise Unsupported("text", "'text' must be an object.")
    out: dict[str, Any] = {}
    if text.get("verbosity") is not None:
        note("text.verbosity")
    fmt = text.get("format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    if fmt is None or kind == "text":
        return out
    if kind == "json_object":
        out["response_format"] = {"type": "json_object"}
    elif kind == "json_schema":
        schema = {
            key: fmt[key]
            for key in ("name", "schema", "strict", "description")
            if fmt.get(key) is not None
        }
        out["response_format"] = {"type": "json_schema", "json_schema": schema}
    else:
        raise Unsupported("text.format", f"A text.format of type '{kind}' cannot be translated.")
    return out


def _reasoning_effort(reasoning: Any) -> Any:
    """``reasoning.effort`` is chat's ``reasoning_effort`` (the summary: see ``to_chat``)."""
    if isinstance(reasoning, dict):
        return reasoning.get("effort")
    return None
