"""A small real HTTP server that plays OpenAI-compatible, Azure and Anthropic upstreams.

Tests script it per model name (``FakeUpstream.behave``): latency, failures,
Retry-After, usage reported or not, SSE streams and mid-stream cuts. It records
every request it received.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from tests.support.servers import LoopThread, loopback_socket


@dataclass
class Behavior:
    content: str = "Hello from the fake upstream."
    prompt_tokens: int = 12
    completion_tokens: int = 7
    cached_tokens: int = 0
    report_usage: bool = True
    latency_ms: float = 0.0
    fail_statuses: list[int] = field(default_factory=list)  # answered first, in order
    fail_always: int | None = None
    retry_after: str | None = None
    error_body: dict[str, Any] | None = None
    stream_pieces: list[str] | None = None  # default: content split in words
    cut_after: int | None = None  # stream: drop the connection after N content chunks
    hang_seconds: float = 0.0  # sleep before answering anything (timeouts)
    tool_call: bool = False
    chunk_delay_ms: float = 0.0  # stream: pause between chunks
    raw_answer: bytes | None = None  # answered as is with status 200 (e.g. not JSON)
    # Anthropic only: cache writes, the streamed tool input, in-stream error events.
    cache_write_tokens: int = 0
    tool_json_pieces: list[str] = field(default_factory=lambda: ['{"q": ', '"x"}'])
    stream_error_after: int | None = None  # an error event after N text deltas (0: first)
    stream_error: tuple[str, str] = ("overloaded_error", "Overloaded")


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    query: dict[str, str]


class FakeUpstream:
    def __init__(self) -> None:
        self.behaviors: dict[str, Behavior] = {}
        self.received: list[Received] = []
        self.calls: Counter[str] = Counter()
        self.streams_abandoned = 0  # streams whose reader went away before the end
        self._thread = LoopThread("fake-upstream")
        self._sock = loopback_socket()
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._runner: web.AppRunner | None = None
        self._thread.run(self._start())

    def behave(self, model: str, **changes: Any) -> Behavior:
        behavior = Behavior(**changes)
        self.behaviors[model] = behavior
        return behavior

    def reset(self) -> None:
        self.behaviors.clear()
        self.received.clear()
        self.calls.clear()
        self.streams_abandoned = 0

    def close(self) -> None:
        if self._runner is not None:
            self._thread.run(self._runner.cleanup())
        self._thread.close()
        self._sock.close()

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/completions", self._completions)
        app.router.add_post("/v1/embeddings", self._embeddings)
        app.router.add_post("/openai/deployments/{deployment}/chat/completions", self._chat)
        app.router.add_post("/anthropic/v1/messages", self._anthropic)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.SockSite(self._runner, self._sock)
        await site.start()

    async def _record(self, request: web.Request) -> tuple[dict[str, Any], Behavior]:
        body = await request.json()
        model = request.match_info.get("deployment") or str(body.get("model"))
        self.received.append(
            Received(request.path, dict(request.headers), body, dict(request.query))
        )
        self.calls[model] += 1
        behavior = self.behaviors.get(model) or Behavior()
        if behavior.hang_seconds:
            await asyncio.sleep(behavior.hang_seconds)
        if behavior.latency_ms:
            await asyncio.sleep(behavior.latency_ms / 1000.0)
        return body, behavior

    @staticmethod
    def _failure(behavior: Behavior) -> web.Response | None:
        if behavior.raw_answer is not None:
            return web.Response(body=behavior.raw_answer, content_type="application/json")
        status = behavior.fail_statuses.pop(0) if behavior.fail_statuses else behavior.fail_always
        if status is None:
            return None
        headers = {"retry-after": behavior.retry_after} if behavior.retry_after else {}
        body = behavior.error_body or {
            "error": {"message": f"fake failure {status}", "type": "server_error", "code": None}
        }
        return web.json_response(body, status=status, headers=headers)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body, behavior = await self._record(request)
        failure = self._failure(behavior)
        if failure is not None:
            return failure
        model = str(body.get("model"))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, behavior, model, include_usage, chat=True)
        message: dict[str, Any] = {"role": "assistant", "content": behavior.content}
        finish = "stop"
        if behavior.tool_call:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "lookup", "arguments": '{"q": "x"}'},
                    }
                ],
            }
            finish = "tool_calls"
        answer: dict[str, Any] = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": f"{model}-2026-01-01",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        }
        if behavior.report_usage:
            answer["usage"] = _usage(behavior)
        return web.json_response(answer)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        body, behavior = await self._record(request)
        failure = self._failure(behavior)
        if failure is not None:
            return failure
        model = str(body.get("model"))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, behavior, model, include_usage, chat=False)
        answer: dict[str, Any] = {
            "id": "cmpl-fake",
            "object": "text_completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "text": behavior.content, "finish_reason": "stop"}],
        }
        if behavior.report_usage:
            answer["usage"] = _usage(behavior)
        return web.json_response(answer)

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        body, behavior = await self._record(request)
        failure = self._failure(behavior)
        if failure is not None:
            return failure
        inputs = body.get("input")
        items = [inputs] if isinstance(inputs, str) else list(inputs or [])
        answer: dict[str, Any] = {
            "object": "list",
            "data": [
                {"object": "embedding", "index": i, "embedding": [0.1, 0.2, 0.3]}
                for i, _ in enumerate(items)
            ],
            "model": body.get("model"),
        }
        if behavior.report_usage:
            answer["usage"] = {
                "prompt_tokens": behavior.prompt_tokens,
                "total_tokens": behavior.prompt_tokens,
            }
        return web.json_response(answer)

    async def _stream(
        self,
        request: web.Request,
        behavior: Behavior,
        model: str,
        include_usage: bool,
        *,
        chat: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        pieces = behavior.stream_pieces or _words(behavior.content)
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model}
        obj = "chat.completion.chunk" if chat else "text_completion"
        for index, piece in enumerate(pieces):
            if behavior.cut_after is not None and index >= behavior.cut_after:
                assert request.transport is not None
                request.transport.abort()  # a cut mid-stream: no terminating chunk
                return response
            choice: dict[str, Any] = (
                {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                if chat
                else {"index": 0, "text": piece, "finish_reason": None}
            )
            try:
                await _send(response, {**base, "object": obj, "choices": [choice]})
            except (ConnectionError, RuntimeError):
                self.streams_abandoned += 1
                return response
            if behavior.chunk_delay_ms:
                await asyncio.sleep(behavior.chunk_delay_ms / 1000.0)
        last: dict[str, Any] = (
            {"index": 0, "delta": {}, "finish_reason": "stop"}
            if chat
            else {"index": 0, "text": "", "finish_reason": "stop"}
        )
        await _send(response, {**base, "object": obj, "choices": [last]})
        if include_usage and behavior.report_usage:
            await _send(response, {**base, "object": obj, "choices": [], "usage": _usage(behavior)})
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body, behavior = await self._record(request)
        refused = _anthropic_header_check(request)
        if refused is not None:
            return refused
        failure = self._anthropic_failure(behavior)
        if failure is not None:
            return failure
        usage = {
            "input_tokens": behavior.prompt_tokens,
            "output_tokens": behavior.completion_tokens,
            "cache_read_input_tokens": behavior.cached_tokens,
            "cache_creation_input_tokens": behavior.cache_write_tokens,
        }
        model = str(body.get("model"))
        if not body.get("stream"):
            content, stop_reason = _anthropic_content(behavior)
            return web.json_response(
                {
                    "id": "msg_fake",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop_reason,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        return await self._anthropic_stream(request, behavior, model, usage)

    @staticmethod
    def _anthropic_failure(behavior: Behavior) -> web.Response | None:
        """Failures in Anthropic's shape: ``{"type": "error", "error": {type, message}}``."""
        status = behavior.fail_statuses.pop(0) if behavior.fail_statuses else behavior.fail_always
        if status is None:
            return None
        headers = {"retry-after": behavior.retry_after} if behavior.retry_after else {}
        body = behavior.error_body or _anthropic_error(
            ANTHROPIC_ERROR_TYPES.get(status, "api_error"), f"fake failure {status}"
        )
        return web.json_response(body, status=status, headers=headers)

    async def _anthropic_stream(
        self, request: web.Request, behavior: Behavior, model: str, usage: dict[str, Any]
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        if behavior.stream_error_after == 0:  # the very first event is the error
            await _event(response, "error", _anthropic_error(*behavior.stream_error))
            await response.write_eof()
            return response
        start = {**usage, "output_tokens": 1}
        message: dict[str, Any] = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "usage": start,
        }
        await _event(response, "message_start", {"type": "message_start", "message": message})
        await _event(response, "ping", {"type": "ping"})
        pieces = behavior.stream_pieces or _words(behavior.content)
        if not await self._anthropic_text_block(request, response, behavior, pieces):
            return response
        stop_reason = "end_turn"
        if behavior.tool_call:
            await _anthropic_tool_block(response, 1, behavior.tool_json_pieces)
            stop_reason = "tool_use"
        # message_delta restates the final output count (and, as the API does now, input).
        final = {"output_tokens": behavior.completion_tokens}
        await _event(
            response,
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": final,
            },
        )
        await _event(response, "message_stop", {"type": "message_stop"})
        await response.write_eof()
        return response

    async def _anthropic_text_block(
        self,
        request: web.Request,
        response: web.StreamResponse,
        behavior: Behavior,
        pieces: list[str],
    ) -> bool:
        """The text block; False when the stream was cut or ended by an error event."""
        block = {"type": "text", "text": ""}
        await _event(
            response,
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        )
        for index, piece in enumerate(pieces):
            if behavior.cut_after is not None and index >= behavior.cut_after:
                assert request.transport is not None
                request.transport.abort()
                return False
            if behavior.stream_error_after is not None and index >= behavior.stream_error_after:
                await _event(response, "error", _anthropic_error(*behavior.stream_error))
                await response.write_eof()
                return False
            delta = {"type": "text_delta", "text": piece}
            await _event(
                response,
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": delta},
            )
        await _event(response, "content_block_stop", {"type": "content_block_stop", "index": 0})
        return True


ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _anthropic_error(kind: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message}}


def _anthropic_header_check(request: web.Request) -> web.Response | None:
    """Refuse as Anthropic does a call without its key header or API version."""
    if not request.headers.get("x-api-key"):
        body = _anthropic_error("authentication_error", "x-api-key header is required")
        return web.json_response(body, status=401)
    if not request.headers.get("anthropic-version"):
        body = _anthropic_error("invalid_request_error", "anthropic-version header is required")
        return web.json_response(body, status=400)
    return None


def _anthropic_content(behavior: Behavior) -> tuple[list[dict[str, Any]], str]:
    content: list[dict[str, Any]] = [{"type": "text", "text": behavior.content}]
    if not behavior.tool_call:
        return content, "end_turn"
    tool = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"q": "x"}}
    return [*content, tool], "tool_use"


async def _anthropic_tool_block(
    response: web.StreamResponse, index: int, json_pieces: list[str]
) -> None:
    block = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}
    await _event(
        response,
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )
    for piece in json_pieces:
        delta = {"type": "input_json_delta", "partial_json": piece}
        await _event(
            response,
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": delta},
        )
    await _event(response, "content_block_stop", {"type": "content_block_stop", "index": index})


def _usage(behavior: Behavior) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": behavior.prompt_tokens,
        "completion_tokens": behavior.completion_tokens,
        "total_tokens": behavior.prompt_tokens + behavior.completion_tokens,
    }
    if behavior.cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": behavior.cached_tokens}
    return usage


def _words(text: str) -> list[str]:
    words = text.split(" ")
    return [w if i == 0 else " " + w for i, w in enumerate(words)]


async def _send(response: web.StreamResponse, payload: dict[str, Any]) -> None:
    await response.write(b"data: " + json.dumps(payload).encode() + b"\n\n")


async def _event(response: web.StreamResponse, name: str, payload: dict[str, Any]) -> None:
    await response.write(f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode())
