"""Parse and check an inbound OpenAI request: only what the gateway reads.

The body is forwarded as the client sent it (unknown fields pass through), so
validation covers the fields the gateway itself relies on and nothing more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import msgspec

from gateway.domain.errors import InvalidJson, InvalidRequest
from gateway.domain.model import Capability, Endpoint, Operation
from gateway.domain.usage import TokenCount
from gateway.inbound.shapes import check_shape
from gateway.routing.operation import classify

_IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
# The fields a budget hold multiplies, with the range a request may ask for. Tokens stop at
# 2**31 - 1 (int32, which every upstream parses, and the usual "no limit" sentinel); no model
# generates near that. Choices stop at 128, OpenAI's own bound. Within these a worst case fits
# the budget counters on every database, so a huge value cannot turn into a database error.
# Each field's range is (minimum, maximum): 1 up, except /v1/completions' max_tokens, which
# may be 0 as OpenAI's schema allows (with echo and logprobs it scores a prompt, generating
# nothing).
MAX_TOKENS_BOUND = 2**31 - 1
MAX_CHOICES = 128
_BOUNDED = {
    "max_tokens": (1, MAX_TOKENS_BOUND),
    "max_completion_tokens": (1, MAX_TOKENS_BOUND),
    "n": (1, MAX_CHOICES),
}
_BOUNDED_COMPLETIONS = {
    **_BOUNDED,
    "max_tokens": (0, MAX_TOKENS_BOUND),
    "best_of": (1, MAX_CHOICES),
}
_BOUNDED_RESPONSES = {"max_output_tokens": (1, MAX_TOKENS_BOUND)}
_BOUNDED_MESSAGES = {"max_tokens": (1, MAX_TOKENS_BOUND)}
# Deeper bodies are refused: encoding, hashing and counting them later would exhaust
# the stack (a RecursionError, answered 500), and no real request nests this far.
MAX_JSON_DEPTH = 128
_CONTAINERS = frozenset({dict, list})
_SCALARS = frozenset({str, int, float, bool, type(None)})
_TOO_DEEP = f"The request body nests deeper than {MAX_JSON_DEPTH} levels."


# The fields that bound the output (the first one set wins); /v1/responses has its own.
_OUTPUT_BOUNDS = ("max_completion_tokens", "max_tokens")
_RESPONSES_OUTPUT_BOUNDS = ("max_output_tokens",)


@dataclass(slots=True)
class InboundRequest:
    endpoint: Endpoint
    body: dict[str, Any]
    configuration: str
    operation: Operation
    required: frozenset[Capability]
    stream: bool
    include_usage: bool  # the client asked for the usage chunk of a stream
    cache_bypass: bool = False  # the client sent ``x-gateway-cache: no-cache``
    # Client headers an upstream of the same API reads (/v1/messages: anthropic-version,
    # anthropic-beta); sent only where the body goes as it is, never translated.
    forward_headers: dict[str, str] = field(default_factory=dict)
    body_bytes: int = 0  # the raw body's size: bounds the size of any text in it
    # The prompt's token counts by encoding, counted once for the budget hold and estimates.
    token_counts: dict[str, TokenCount] = field(default_factory=dict)

    @property
    def max_tokens(self) -> int | None:
        """``max_completion_tokens``, else ``max_tokens`` (``max_output_tokens`` on
        /v1/responses); a null one counts as absent."""
        names = _RESPONSES_OUTPUT_BOUNDS if self.endpoint is Endpoint.RESPONSES else _OUTPUT_BOUNDS
        for name in names:
            value = self.body.get(name)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None

    def count_of(self, name: str) -> int:
        """``n`` or ``best_of`` as a multiplier: 1 when absent or null (checked at parsing)."""
        value = self.body.get(name)
        return value if isinstance(value, int) and not isinstance(value, bool) else 1


def parse_inbound(endpoint: Endpoint, raw: bytes) -> InboundRequest:
    try:
        body = msgspec.json.decode(raw)
    except msgspec.DecodeError as exc:
        raise InvalidJson(f"The request body is not valid JSON: {exc}") from exc
    except RecursionError:  # deeper than the interpreter's stack, let alone the bound
        raise InvalidJson(_TOO_DEEP) from None
    if not isinstance(body, dict):
        raise InvalidJson("The request body must be a JSON object.")
    # A body with fewer brackets than the limit cannot nest past it: two C-level counts
    # spare the walk for most calls.
    brackets = raw.count(b"[") + raw.count(b"{")
    if brackets > MAX_JSON_DEPTH and nests_deeper(body, MAX_JSON_DEPTH):
        raise InvalidJson(_TOO_DEEP)
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidRequest("'model' is required and must be a non-empty string.", param="model")
    return _checked(endpoint, body, model, len(raw))


def refused_request(endpoint: Endpoint, raw: bytes) -> InboundRequest | None:
    """What a refused body let be read, for its row: the endpoint, the configuration it
    names and whether it streams; None when it names none (not an object, no ``model``).
    Only a refusal pays for this second decoding."""
    try:
        body = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    model = body.get("model") if isinstance(body, dict) else None
    if not isinstance(model, str) or not model:
        return None
    stream = body.get("stream") is True
    operation, _ = classify(endpoint, stream=stream)
    named = InboundRequest(endpoint, body, model, operation, frozenset(), stream, False)
    named.body_bytes = len(raw)
    return named


def _checked(endpoint: Endpoint, body: dict[str, Any], model: str, size: int) -> InboundRequest:
    stream = body.get("stream", False)
    if stream is None:
        stream = False
    if not isinstance(stream, bool):
        raise InvalidRequest("'stream' must be a boolean.", param="stream")
    include_usage = _include_usage(body) if stream else False
    operation, required = _operation_of(endpoint, body, stream)
    check_shape(endpoint, body)
    return InboundRequest(
        endpoint, body, model, operation, required, stream, include_usage, body_bytes=size
    )


def nests_deeper(value: Any, limit: int) -> bool:
    """Whether arrays and objects nest deeper than ``limit`` in ``value`` (level 1), a
    decoded JSON object or array.

    Walked level by level, without recursion; a container holding only scalars is
    skipped by one C-level pass over its types.
    """
    level = [value]
    for _ in range(limit):
        below: list[Any] = []
        for node in level:
            children = node.values() if type(node) is dict else node
            if _SCALARS.issuperset(map(type, children)):
                continue
            below.extend(child for child in children if type(child) in _CONTAINERS)
        if not below:
            return False
        level = below
    return True


def _include_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not isinstance(options, dict):
        raise InvalidRequest("'stream_options' must be an object.", param="stream_options")
    return options.get("include_usage") is True


def _operation_of(
    endpoint: Endpoint, body: dict[str, Any], stream: bool
) -> tuple[Operation, frozenset[Capability]]:
    if endpoint is Endpoint.EMBEDDINGS:
        if stream:
            raise InvalidRequest("Embeddings cannot be streamed.", param="stream")
        _check_input(body)
        return classify(Endpoint.EMBEDDINGS)
    if endpoint is Endpoint.COMPLETIONS:
        # OpenAI requires the key but lets it be null (the model then starts a new
        # document, as after its default prompt "<|endoftext|>").
        if "prompt" not in body or not isinstance(body["prompt"], str | list | None):
            raise InvalidRequest(
                "'prompt' is required (a string, an array, or null).", param="prompt"
            )
        _check_bounds(body, _BOUNDED_COMPLETIONS)
        return classify(Endpoint.COMPLETIONS, stream=stream)
    if endpoint is Endpoint.RESPONSES:
        _check_bounds(body, _BOUNDED_RESPONSES)
        return _check_responses(body, stream)
    if endpoint is Endpoint.MESSAGES:
        _check_bounds(body, _BOUNDED_MESSAGES)
        return _check_messages(body, stream)
    _check_bounds(body, _BOUNDED)
    has_tools = _check_messages_and_tools(body)
    return classify(
        Endpoint.CHAT, stream=stream, has_tools=has_tools, has_image=_has_image(body["messages"])
    )


def _check_bounds(body: dict[str, Any], bounds: dict[str, tuple[int, int]]) -> None:
    """Integers in their range, or null (absent); checked before any budget is held."""
    for name, (least, most) in bounds.items():
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= most:
            raise InvalidRequest(f"'{name}' must be an integer from {least} to {most}.", param=name)


def _check_input(body: dict[str, Any]) -> None:
    value = body.get("input")
    if isinstance(value, str):
        return
    if isinstance(value, list) and value:
        return
    raise InvalidRequest("'input' is required (a string or a non-empty array).", param="input")


def _check_messages_and_tools(body: dict[str, Any]) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest(
            "'messages' is required and must be a non-empty array.", param="messages"
        )
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise InvalidRequest(
                f"'messages[{i}]' must be an object with a string 'role'.", param=f"messages[{i}]"
            )
    has_tools = False
    for key in ("tools", "functions"):
        value = body.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise InvalidRequest(f"'{key}' must be an array.", param=key)
        has_tools = has_tools or bool(value)
    return has_tools


def _check_responses(body: dict[str, Any], stream: bool) -> tuple[Operation, frozenset[Capability]]:
    """/v1/responses: ``input`` a string or an array of objects, ``instructions`` a string,
    ``tools`` an array (each may be null); the rest is judged where it is translated."""
    value = body.get("input")
    items_ok = isinstance(value, list) and all(isinstance(i, dict) for i in value)
    if value is not None and not isinstance(value, str) and not items_ok:
        raise InvalidRequest("'input' must be a string or an array of items.", param="input")
    instructions = body.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise InvalidRequest("'instructions' must be a string.", param="instructions")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise InvalidRequest("'tools' must be an array.", param="tools")
    items = value if isinstance(value, list) else []
    return classify(
        Endpoint.RESPONSES, stream=stream, has_tools=bool(tools), has_image=_has_image(items)
    )


def _check_messages(body: dict[str, Any], stream: bool) -> tuple[Operation, frozenset[Capability]]:
    """/v1/messages (Anthropic's): ``messages`` a non-empty array of objects with a string
    ``role``, ``tools`` an array; the operations are chat's (one call history whichever API
    a call came in by)."""
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise InvalidRequest(
            "'messages' is required and must be a non-empty array.", param="messages"
        )
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise InvalidRequest(
                f"'messages[{i}]' must be an object with a string 'role'.", param=f"messages[{i}]"
            )
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise InvalidRequest("'tools' must be an array.", param="tools")
    return classify(
        Endpoint.MESSAGES, stream=stream, has_tools=bool(tools), has_image=_has_image(messages)
    )


def _has_image(messages: list[Any]) -> bool:
    for message in messages:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                kind = part.get("type") if isinstance(part, dict) else None
                if isinstance(kind, str) and kind in _IMAGE_PART_TYPES:
                    return True
    return False
