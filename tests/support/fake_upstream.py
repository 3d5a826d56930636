"""A small real HTTP server that plays OpenAI-compatible, Azure and Anthropic upstreams.

Tests script it per model name (``FakeUpstream.behave``): latency, failures,
Retry-After, usage reported or not, SSE streams and mid-stream cuts; OpenAI's Responses
API too (``fake_responses``). It records
every request it received.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections import Counter
from typing import Any

from aiohttp import web

from tests.support.fake_anthropic import AnthropicRoutes
from tests.support.fake_responses import ResponsesRoutes
from tests.support.fake_shapes import (
    Behavior,
    Received,
    has_tool_result,
    raw_failure,
    send_data,
    send_padding,
    unknown_chat_fields,
    usage_of,
    words,
)
from tests.support.servers import LoopThread, loopback_socket


class FakeUpstream(AnthropicRoutes, ResponsesRoutes):
    def __init__(self) -> None:
        self.behaviors: dict[str, Behavior] = {}
        self.received: list[Received] = []
        self.calls: Counter[str] = Counter()
        self.streams_abandoned = 0  # streams whose reader went away before the end
        # Calls received and not yet past their latency (the answer follows at once), and
        # the most there ever were at one time.
        self.in_flight = 0
        self.max_in_flight = 0
        self.oversize_sent: list[int] = []  # bytes written of each oversize answer or event
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
        self.in_flight = self.max_in_flight = 0
        self.oversize_sent.clear()

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
        app.router.add_post("/anthropic/v1/messages/count_tokens", self._anthropic_count_tokens)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/openai/responses", self._responses)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.SockSite(self._runner, self._sock)
        await site.start()

    async def _record(self, request: web.Request) -> tuple[dict[str, Any], Behavior]:
        body = await request.json()
        model = request.match_info.get("deployment") or str(body.get("model"))
        self.received.append(
            Received(
                request.path,
                dict(request.headers),
                body,
                dict(request.query),
                _peer(request),
            )
        )
        self.calls[model] += 1
        behavior = self.behaviors.get(model) or Behavior()
        if behavior.tool_call and behavior.tool_call_until_result:
            # The call says nothing but the call; the answer after the result, only text.
            done = has_tool_result(body)
            behavior = dataclasses.replace(
                behavior, tool_call=not done, content=behavior.content if done else ""
            )
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if behavior.hang_seconds:
                await asyncio.sleep(behavior.hang_seconds)
            if behavior.latency_ms:
                await asyncio.sleep(behavior.latency_ms / 1000.0)
        finally:
            self.in_flight -= 1
        return body, behavior

    @staticmethod
    def _failure(behavior: Behavior) -> web.Response | None:
        if behavior.raw_answer is not None:
            return web.Response(body=behavior.raw_answer, content_type="application/json")
        status = behavior.fail_statuses.pop(0) if behavior.fail_statuses else behavior.fail_always
        if status is None:
            return None
        if behavior.error_raw is not None:
            return raw_failure(behavior, status)
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
        unknown = unknown_chat_fields(body) if behavior.known_fields_only else []
        if unknown:
            error = {"message": f"Unrecognized request argument supplied: {unknown[0]}"}
            return web.json_response(
                {"error": {**error, "type": "invalid_request_error"}}, status=400
            )
        model = str(body.get("model"))
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            return await self._stream(request, behavior, model, include_usage, chat=True)
        if behavior.oversize_bytes:
            return await self._oversize(request, behavior.oversize_bytes)
        message: dict[str, Any] = {"role": "assistant", "content": _content(behavior, body)}
        finish = "stop"
        if behavior.tool_call:
            message = {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": behavior.tool_name, "arguments": '{"q": "x"}'},
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
            answer["usage"] = usage_of(behavior)
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
            answer["usage"] = usage_of(behavior)
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

    async def _oversize(self, request: web.Request, size: int) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "application/json"})
        await response.prepare(request)
        sent = await send_padding(response, b'{"id": "chatcmpl-huge", "pad": "', size)
        self.oversize_sent.append(sent)
        return response

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
        if behavior.gzip_stream:
            response.enable_compression(web.ContentCoding.gzip)
        await response.prepare(request)
        pieces = behavior.stream_pieces or words(behavior.content)
        base = {"id": "chatcmpl-fake", "created": int(time.time()), "model": model}
        obj = "chat.completion.chunk" if chat else "text_completion"
        for index, piece in enumerate(pieces):
            if behavior.oversize_bytes and index >= behavior.oversize_event_after:
                sent = await send_padding(response, b'data: {"pad": "', behavior.oversize_bytes)
                self.oversize_sent.append(sent)
                return response
            if behavior.cut_after is not None and index >= behavior.cut_after:
                assert request.transport is not None
                request.transport.abort()  # a cut mid-stream: no terminating chunk
                return response
            if index == behavior.inject_at:
                await response.write(behavior.inject)
            choice: dict[str, Any] = (
                {"index": 0, "delta": {"content": piece}, "finish_reason": None}
                if chat
                else {"index": 0, "text": piece, "finish_reason": None}
            )
            try:
                await send_data(response, {**base, "object": obj, "choices": [choice]})
            except (ConnectionError, RuntimeError):
                self.streams_abandoned += 1
                return response
            if behavior.chunk_delay_ms:
                await asyncio.sleep(behavior.chunk_delay_ms / 1000.0)
        finish = "stop"
        if chat and behavior.tool_call:  # then one call to lookup, its arguments in pieces
            call = {"index": 0, "id": "call_1", "type": "function"}
            head = {**call, "function": {"name": behavior.tool_name, "arguments": ""}}
            deltas = [head] + [
                {"index": 0, "function": {"arguments": piece}}
                for piece in behavior.tool_json_pieces
            ]
            for delta in deltas:
                choice = {"index": 0, "delta": {"tool_calls": [delta]}, "finish_reason": None}
                await send_data(response, {**base, "object": obj, "choices": [choice]})
            finish = "tool_calls"
        last: dict[str, Any] = (
            {"index": 0, "delta": {}, "finish_reason": finish}
            if chat
            else {"index": 0, "text": "", "finish_reason": "stop"}
        )
        await send_data(response, {**base, "object": obj, "choices": [last]})
        if include_usage and behavior.report_usage:
            await send_data(
                response, {**base, "object": obj, "choices": [], "usage": usage_of(behavior)}
            )
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _content(behavior: Behavior, body: dict[str, Any]) -> str:
    messages = body.get("messages") or [{}]
    last = messages[-1].get("content") if isinstance(messages[-1], dict) else None
    return behavior.answers.get(str(last), behavior.content)


def _peer(request: web.Request) -> tuple[str, int] | None:
    transport = request.transport
    peer = transport.get_extra_info("peername") if transport is not None else None
    return (str(peer[0]), int(peer[1])) if peer else None
