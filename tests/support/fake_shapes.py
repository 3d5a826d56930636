"""What a fake upstream is told to do, and the small helpers its routes share."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.openai_schema import document


@dataclass
class Behavior:
    content: str = "Hello from the fake upstream."
    # A whole chat answer's content by the last message's content (else ``content``).
    answers: dict[str, str] = field(default_factory=dict)
    prompt_tokens: int = 12
    completion_tokens: int = 7
    cached_tokens: int = 0
    report_usage: bool = True
    latency_ms: float = 0.0
    fail_statuses: list[int] = field(default_factory=list)  # answered first, in order
    fail_always: int | None = None
    retry_after: str | None = None
    error_body: dict[str, Any] | None = None
    error_raw: bytes | None = None  # a failure's body sent as is (compressed, HTML, ...)
    error_headers: dict[str, str] = field(default_factory=dict)  # e.g. content-encoding
    stream_pieces: list[str] | None = None  # default: content split in words
    cut_after: int | None = None  # stream: drop the connection after N content chunks
    hang_seconds: float = 0.0  # sleep before answering anything (timeouts)
    tool_call: bool = False
    # With tool_call: call the tool (and say nothing else) until the request carries a
    # tool's result (an agent's loop: call, then answer with the result), then answer
    # ``content``.
    tool_call_until_result: bool = False
    chunk_delay_ms: float = 0.0  # stream: pause between chunks
    raw_answer: bytes | None = None  # answered as is with status 200 (e.g. not JSON)
    # Too large to hold: a whole answer this many bytes long (chunked, no length), or in a
    # stream, after ``oversize_event_after`` content chunks, one event this long.
    oversize_bytes: int = 0
    oversize_event_after: int = 0
    inject: bytes = b""  # stream: raw SSE bytes written before content piece `inject_at`
    inject_at: int | None = None  # 0: before the very first event
    gzip_stream: bool = False  # stream: compressed, whatever the request's accept-encoding
    # Anthropic only: cache writes, the streamed tool input, in-stream error events.
    cache_write_tokens: int = 0
    tool_json_pieces: list[str] = field(default_factory=lambda: ['{"q": ', '"x"}'])
    stream_error_after: int | None = None  # an error event after N text deltas (0: first)
    stream_error: tuple[str, str] = ("overloaded_error", "Overloaded")
    # Anthropic only: the input of a tool the request forces (tool_choice type "tool").
    forced_input: dict[str, Any] = field(default_factory=lambda: {"q": "x"})
    # Anthropic only: text the model writes before calling the forced tool ("Let me check.").
    forced_preamble: str = ""
    # Anthropic only: a thinking block (signed ``signature_of`` its text) before the text;
    # a request that turns extended thinking on gets one anyway ("Let me think.").
    thinking: str = ""
    # The name of the tool the model calls (tool_call).
    tool_name: str = "lookup"
    # Chat only: refuse (400) a request with a top-level field OpenAI's chat API does not
    # define, as strict OpenAI-compatible servers do.
    known_fields_only: bool = False


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    query: dict[str, str]
    peer: tuple[str, int] | None = None  # the client's address: one per connection


def raw_failure(behavior: Behavior, status: int) -> web.Response:
    """A failure answered with ``error_raw`` and ``error_headers`` exactly as given."""
    headers = {"content-type": "application/json", **behavior.error_headers}
    if behavior.retry_after:
        headers["retry-after"] = behavior.retry_after
    return web.Response(body=behavior.error_raw, status=status, headers=headers)


def usage_of(behavior: Behavior) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": behavior.prompt_tokens,
        "completion_tokens": behavior.completion_tokens,
        "total_tokens": behavior.prompt_tokens + behavior.completion_tokens,
    }
    if behavior.cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": behavior.cached_tokens}
    return usage


def words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


async def send_data(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


async def send_padding(response: web.StreamResponse, head: bytes, size: int) -> int:
    """Write ``head`` then filler up to ``size`` bytes, in 64 KiB writes, until the reader
    goes away; the bytes written."""
    sent = 0
    block = b"x" * 65536
    try:
        await response.write(head)
        sent = len(head)
        while sent < size:
            part = block[: size - sent]
            await response.write(part)
            sent += len(part)
    except (ConnectionError, RuntimeError):
        pass
    return sent


async def send_event(response: web.StreamResponse, name: str, payload: dict[str, Any]) -> None:
    await response.write(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())


def has_tool_result(body: dict[str, Any]) -> bool:
    """A chat ``tool`` message, an Anthropic ``tool_result`` block, a Responses
    ``function_call_output`` item."""
    for message in body.get("messages") or []:
        if message.get("role") == "tool":
            return True
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, dict) and b.get("type") == "tool_result" for b in content
        ):
            return True
    items = body.get("input")
    return isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "function_call_output" for i in items
    )


def signature_of(thinking: str) -> str:
    """The fake Anthropic's signature over a thinking block's text."""
    return f"sig-{thinking}"


def unknown_chat_fields(body: dict[str, Any]) -> list[str]:
    """Top-level fields of ``body`` that OpenAI's chat request schema does not define."""
    schemas = document()["components"]["schemas"]
    known: set[str] = set()
    pending = [schemas["CreateChatCompletionRequest"]]
    while pending:
        schema = pending.pop()
        if "$ref" in schema:
            pending.append(schemas[schema["$ref"].rsplit("/", 1)[-1]])
            continue
        known |= set(schema.get("properties", {}))
        pending.extend(schema.get("allOf", []))
    return sorted(set(body) - known)
