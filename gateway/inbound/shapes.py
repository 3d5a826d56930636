"""The type of every request field the gateway or one of its translations reads (pure).

A body is forwarded as the client sent it, but the gateway reads parts of it: to route,
count, hold a budget, key the cache, and to translate it for Anthropic or from the
Responses or Messages APIs. A value of the wrong type there (a list where a string is
expected, an object where a number is) must be the client's 400 naming the parameter,
never an exception inside the gateway: one would be a 500 for the caller, and an exception
taken for a provider's fault would lower that provider's health for every tenant.

These structs name only what is read, typed as the OpenAI API reference types it. Fields
they do not name pass through unchecked (the upstream judges them), and each struct
ignores unknown keys. ``check_shape`` converts the decoded body once; msgspec reports the
first mismatch with its path, which becomes the 400's ``param``.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from gateway.domain.errors import InvalidRequest
from gateway.domain.model import Endpoint

Object = dict[str, Any]


class _Shape(msgspec.Struct):
    """Unknown keys are ignored (the default): only the named ones are checked."""


# --- Chat Completions -----------------------------------------------------------------------


class ImageURL(_Shape):
    url: str
    detail: str | None = None


class ChatPart(_Shape):
    type: str
    text: str | None = None
    image_url: str | ImageURL | None = None
    refusal: str | None = None


class FunctionCall(_Shape):
    name: str | None = None
    arguments: str | None = None


class ToolCall(_Shape):
    id: str | None = None
    type: str | None = None
    function: FunctionCall | None = None


class ChatMessage(_Shape):
    role: str
    content: str | list[ChatPart] | None = None
    name: str | None = None
    refusal: str | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None


class FunctionDefinition(_Shape):
    name: str | None = None
    description: str | None = None
    parameters: Object | None = None
    strict: bool | None = None


class ChatTool(_Shape):
    type: str | None = None
    function: FunctionDefinition | None = None


class FunctionName(_Shape):
    name: str | None = None


class ChatToolChoice(_Shape):
    type: str | None = None
    function: FunctionName | None = None


class JsonSchemaFormat(_Shape):
    name: str | None = None
    description: str | None = None
    schema: Object | None = None
    strict: bool | None = None


class ResponseFormat(_Shape):
    type: str
    json_schema: JsonSchemaFormat | None = None


class StreamOptions(_Shape):
    include_usage: bool | None = None


class _Sampling(_Shape):
    """What chat and completions share."""

    temperature: float | None = None
    top_p: float | None = None
    stop: str | list[str] | None = None
    user: str | None = None
    stream_options: StreamOptions | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    seed: int | None = None


class ChatBody(_Sampling):
    messages: list[ChatMessage] = []
    tools: list[ChatTool] | None = None
    functions: list[FunctionDefinition] | None = None
    tool_choice: str | ChatToolChoice | None = None
    response_format: ResponseFormat | None = None
    parallel_tool_calls: bool | None = None
    service_tier: str | None = None
    reasoning_effort: str | None = None
    verbosity: str | None = None
    safety_identifier: str | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    modalities: list[str] | None = None
    metadata: Object | None = None


# --- Completions and embeddings -------------------------------------------------------------

Prompt = str | list[str | int | list[int]]


class CompletionsBody(_Sampling):
    prompt: Prompt | None = None
    suffix: str | None = None
    echo: bool | None = None
    logprobs: int | None = None


class EmbeddingsBody(_Shape):
    input: Prompt
    dimensions: int | None = None
    encoding_format: str | None = None
    user: str | None = None


# --- Responses ------------------------------------------------------------------------------


class ResponsesPart(_Shape):
    type: str
    text: str | None = None
    refusal: str | None = None
    image_url: str | None = None
    detail: str | None = None
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


class ResponsesItem(_Shape):
    type: str | None = None
    role: str | None = None
    content: str | list[ResponsesPart] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | None = None
    output: str | list[ResponsesPart] | None = None


class ResponsesTool(_Shape):
    type: str
    name: str | None = None
    description: str | None = None
    parameters: Object | None = None
    strict: bool | None = None


class ResponsesToolChoice(_Shape):
    type: str
    name: str | None = None


class TextFormat(_Shape):
    type: str
    name: str | None = None
    description: str | None = None
    schema: Object | None = None
    strict: bool | None = None


class TextOptions(_Shape):
    format: TextFormat | None = None
    verbosity: str | None = None


class Reasoning(_Shape):
    effort: str | None = None
    summary: str | None = None


class ResponsesBody(_Shape):
    input: str | list[ResponsesItem] | None = None
    instructions: str | None = None
    tools: list[ResponsesTool | None] | None = None
    tool_choice: str | ResponsesToolChoice | None = None
    text: TextOptions | None = None
    reasoning: Reasoning | None = None
    temperature: float | None = None
    top_p: float | None = None
    parallel_tool_calls: bool | None = None
    store: bool | None = None
    background: bool | None = None
    previous_response_id: str | None = None
    include: list[str] | None = None
    truncation: str | None = None
    top_logprobs: int | None = None
    max_tool_calls: int | None = None
    metadata: Object | None = None
    service_tier: str | None = None
    user: str | None = None
    safety_identifier: str | None = None


# --- Messages (Anthropic) -------------------------------------------------------------------


class ImageSource(_Shape):
    type: str
    media_type: str | None = None
    data: str | None = None
    url: str | None = None


class MessagesBlock(_Shape):
    type: str
    text: str | None = None
    source: ImageSource | None = None
    id: str | None = None
    name: str | None = None
    input: Object | None = None
    tool_use_id: str | None = None
    content: str | list[MessagesBlock] | None = None
    is_error: bool | None = None
    thinking: str | None = None
    signature: str | None = None


class MessagesMessage(_Shape):
    role: str
    content: str | list[MessagesBlock]


class MessagesTool(_Shape):
    name: str | None = None
    type: str | None = None
    description: str | None = None
    input_schema: Object | None = None


class MessagesToolChoice(_Shape):
    type: str
    name: str | None = None
    disable_parallel_tool_use: bool | None = None


class Thinking(_Shape):
    type: str
    budget_tokens: int | None = None


class MessagesBody(_Shape):
    messages: list[MessagesMessage] = []
    system: str | list[MessagesBlock] | None = None
    max_tokens: int | None = None
    tools: list[MessagesTool] | None = None
    tool_choice: MessagesToolChoice | None = None
    stop_sequences: list[str] | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    thinking: Thinking | None = None
    metadata: Object | None = None


_SHAPES: dict[Endpoint, type[_Shape]] = {
    Endpoint.CHAT: ChatBody,
    Endpoint.COMPLETIONS: CompletionsBody,
    Endpoint.EMBEDDINGS: EmbeddingsBody,
    Endpoint.RESPONSES: ResponsesBody,
    Endpoint.MESSAGES: MessagesBody,
}
# msgspec's message: "Expected `str`, got `array` - at `$.messages[0].role`".
_AT = re.compile(r"^(?P<what>.*?)(?: - at `\$(?P<path>[^`]*)`)?$", re.DOTALL)


def check_shape(endpoint: Endpoint, body: Object) -> None:
    """A 400 naming the first field the gateway reads whose value has the wrong type."""
    try:
        msgspec.convert(body, _SHAPES[endpoint])
    except msgspec.ValidationError as exc:
        param, what = _located(str(exc))
        raise InvalidRequest(f"Invalid value for '{param}': {what}.", param=param) from None


def _located(message: str) -> tuple[str, str]:
    """The parameter (``messages[0].role``) and msgspec's description of the mismatch."""
    match = _AT.match(message)
    assert match is not None  # the pattern matches any text
    path = (match.group("path") or "").lstrip(".")
    what = match.group("what").replace("`", "")
    return path or "body", what[:1].lower() + what[1:]
