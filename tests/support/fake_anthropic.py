"""The fake Anthropic Messages API: whole answers, SSE streams, tool use and errors."""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.support.fake_shapes import (
    Behavior,
    raw_failure,
    send_event,
    send_padding,
    signature_of,
    words,
)


class AnthropicRoutes:
    """Mixed into FakeUpstream: the routes under /anthropic/v1."""

    oversize_sent: list[int]

    async def _record(self, request: web.Request) -> tuple[dict[str, Any], Behavior]:
        raise NotImplementedError

    async def _oversize(self, request: web.Request, size: int) -> web.StreamResponse:
        raise NotImplementedError

    async def _anthropic(self, request: web.Request) -> web.StreamResponse:
        body, behavior = await self._record(request)
        refused = _anthropic_header_check(request) or _beta_check(request, body)
        if refused is not None:
            return refused
        failure = self._anthropic_failure(behavior)
        if failure is not None:
            return failure
        refusal = _thinking_refusal(body)
        if refusal is not None:
            return web.json_response(_anthropic_error("invalid_request_error", refusal), status=400)
        thinking = behavior.thinking or ("Let me think." if _thinking_on(body) else "")
        usage = {
            "input_tokens": behavior.prompt_tokens,
            "output_tokens": behavior.completion_tokens,
            "cache_read_input_tokens": behavior.cached_tokens,
            "cache_creation_input_tokens": behavior.cache_write_tokens,
        }
        model = str(body.get("model"))
        if not body.get("stream") and behavior.oversize_bytes:
            return await self._oversize(request, behavior.oversize_bytes)
        forced = _forced_tool(body, behavior)
        if not body.get("stream"):
            content, stop_reason = _anthropic_content(behavior)
            if forced is not None:  # as the API does: the forced tool, after any preamble
                content, stop_reason = [_tool_use(forced, behavior.forced_input)], "tool_use"
                if behavior.forced_preamble:
                    content.insert(0, {"type": "text", "text": behavior.forced_preamble})
            if thinking:
                content.insert(0, _thinking(thinking))
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
        return await self._anthropic_stream(request, behavior, model, usage, forced, thinking)

    @staticmethod
    def _anthropic_failure(behavior: Behavior) -> web.Response | None:
        """Failures in Anthropic's shape: ``{"type": "error", "error": {type, message}}``."""
        status = behavior.fail_statuses.pop(0) if behavior.fail_statuses else behavior.fail_always
        if status is None:
            return None
        if behavior.error_raw is not None:
            return raw_failure(behavior, status)
        headers = {"retry-after": behavior.retry_after} if behavior.retry_after else {}
        body = behavior.error_body or _anthropic_error(
            ANTHROPIC_ERROR_TYPES.get(status, "api_error"), f"fake failure {status}"
        )
        return web.json_response(body, status=status, headers=headers)

    async def _anthropic_stream(
        self,
        request: web.Request,
        behavior: Behavior,
        model: str,
        usage: dict[str, Any],
        forced: str | None = None,
        thinking: str = "",
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        if behavior.stream_error_after == 0:  # the very first event is the error
            await send_event(response, "error", _anthropic_error(*behavior.stream_error))
            await response.write_eof()
            return response
        if behavior.inject_at == 0:
            await response.write(behavior.inject)
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
        await send_event(response, "message_start", {"type": "message_start", "message": message})
        await send_event(response, "ping", {"type": "ping"})
        first = 0
        if thinking:
            await _anthropic_thinking_block(response, thinking)
            first = 1
        stop_reason = await self._anthropic_blocks(request, response, behavior, forced, first)
        if stop_reason is None:
            return response
        # message_delta restates the final output count (and, as the API does now, input).
        final = {"output_tokens": behavior.completion_tokens}
        await send_event(
            response,
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": final,
            },
        )
        await send_event(response, "message_stop", {"type": "message_stop"})
        await response.write_eof()
        return response

    async def _anthropic_blocks(
        self,
        request: web.Request,
        response: web.StreamResponse,
        behavior: Behavior,
        forced: str | None,
        first: int = 0,
    ) -> str | None:
        """The content blocks (from index ``first``, after a thinking block) and the stop
        reason; None when the stream was cut short."""
        if forced is not None:  # the forced tool's input, streamed in small pieces
            index = first
            if behavior.forced_preamble:  # after a text block of its own
                preamble = words(behavior.forced_preamble)
                await self._anthropic_text_block(request, response, behavior, preamble, first)
                index = first + 1
            text = json.dumps(behavior.forced_input)
            pieces = [text[i : i + 8] for i in range(0, len(text), 8)]
            await _anthropic_tool_block(response, index, pieces, forced)
            return "tool_use"
        pieces = behavior.stream_pieces or words(behavior.content)
        if not await self._anthropic_text_block(request, response, behavior, pieces, first):
            return None
        if behavior.tool_call:
            await _anthropic_tool_block(
                response, first + 1, behavior.tool_json_pieces, behavior.tool_name
            )
            return "tool_use"
        return "end_turn"

    async def _anthropic_text_block(
        self,
        request: web.Request,
        response: web.StreamResponse,
        behavior: Behavior,
        pieces: list[str],
        at: int = 0,
    ) -> bool:
        """The text block; False when the stream was cut or ended by an error event."""
        block = {"type": "text", "text": ""}
        await send_event(
            response,
            "content_block_start",
            {"type": "content_block_start", "index": at, "content_block": block},
        )
        for index, piece in enumerate(pieces):
            if behavior.oversize_bytes and index >= behavior.oversize_event_after:
                head = b'event: content_block_delta\ndata: {"pad": "'
                self.oversize_sent.append(
                    await send_padding(response, head, behavior.oversize_bytes)
                )
                return False
            if behavior.cut_after is not None and index >= behavior.cut_after:
                assert request.transport is not None
                request.transport.abort()
                return False
            if index == behavior.inject_at and index > 0:
                await response.write(behavior.inject)
            if behavior.stream_error_after is not None and index >= behavior.stream_error_after:
                await send_event(response, "error", _anthropic_error(*behavior.stream_error))
                await response.write_eof()
                return False
            delta = {"type": "text_delta", "text": piece}
            await send_event(
                response,
                "content_block_delta",
                {"type": "content_block_delta", "index": at, "delta": delta},
            )
        await send_event(
            response, "content_block_stop", {"type": "content_block_stop", "index": at}
        )
        return True

    async def _anthropic_count_tokens(self, request: web.Request) -> web.StreamResponse:
        """``input_tokens``: the behaviour's prompt_tokens for the model named."""
        body, behavior = await self._record(request)
        refused = _anthropic_header_check(request) or _beta_check(request, body)
        if refused is not None:
            return refused
        failure = self._anthropic_failure(behavior)
        if failure is not None:
            return failure
        return web.json_response({"input_tokens": behavior.prompt_tokens})


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


def _beta_check(request: web.Request, body: dict[str, Any]) -> web.Response | None:
    """As Anthropic refuses a beta field sent without its ``anthropic-beta`` header."""
    beta = request.headers.get("anthropic-beta", "")
    if "context_management" in body and "context-management" not in beta:
        message = "context_management: Extra inputs are not permitted"
        return web.json_response(_anthropic_error("invalid_request_error", message), status=400)
    return None


def _thinking(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature_of(text)}


async def _anthropic_thinking_block(response: web.StreamResponse, text: str) -> None:
    start = {"type": "thinking", "thinking": "", "signature": ""}
    events: list[tuple[str, dict[str, Any]]] = [
        ("content_block_start", {"index": 0, "content_block": start}),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "thinking_delta", "thinking": text}},
        ),
        (
            "content_block_delta",
            {"index": 0, "delta": {"type": "signature_delta", "signature": signature_of(text)}},
        ),
        ("content_block_stop", {"index": 0}),
    ]
    for name, payload in events:
        await send_event(response, name, {"type": name, **payload})


def _forced_tool(body: dict[str, Any], behavior: Behavior) -> str | None:
    """The tool the answer must be: the named one, or for ``any`` the last one listed
    (unless the behaviour calls ``lookup``)."""
    choice = body.get("tool_choice")
    kind = choice.get("type") if isinstance(choice, dict) else None
    if kind == "tool":
        return str(choice["name"])
    if kind == "any" and not behavior.tool_call and body.get("tools"):
        return str(body["tools"][-1]["name"])
    return None


def _tool_use(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": "toolu_1", "name": name, "input": data}


def _anthropic_content(behavior: Behavior) -> tuple[list[dict[str, Any]], str]:
    content: list[dict[str, Any]] = [{"type": "text", "text": behavior.content}]
    if not behavior.tool_call:
        return content, "end_turn"
    return [*content, _tool_use(behavior.tool_name, {"q": "x"})], "tool_use"


async def _anthropic_tool_block(
    response: web.StreamResponse, index: int, json_pieces: list[str], name: str = "lookup"
) -> None:
    block = _tool_use(name, {})
    await send_event(
        response,
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": block},
    )
    for piece in json_pieces:
        delta = {"type": "input_json_delta", "partial_json": piece}
        await send_event(
            response,
            "content_block_delta",
            {"type": "content_block_delta", "index": index, "delta": delta},
        )
    await send_event(response, "content_block_stop", {"type": "content_block_stop", "index": index})


def _thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") == "enabled"


def _thinking_refusal(body: dict[str, Any]) -> str | None:
    """What Anthropic refuses about extended thinking (None: nothing), so a translation
    that gets it wrong fails its test: a thinking block whose signature is not the one
    given; beside thinking, a budget outside 1024..max_tokens, a temperature other than 1,
    a forced tool, a tool loop whose last assistant turn does not start with its thinking
    block."""
    for message in body.get("messages") or []:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "thinking" and block.get("signature") != signature_of(
                str(block.get("thinking"))
            ):
                return "Invalid `signature` in `thinking` block"
    if not _thinking_on(body):
        return None
    budget = body["thinking"].get("budget_tokens")
    if not isinstance(budget, int) or budget < 1024 or budget >= body.get("max_tokens", 0):
        return "thinking.budget_tokens: must be >= 1024 and less than max_tokens"
    if body.get("temperature") not in (None, 1):
        return "temperature may only be set to 1 when thinking is enabled"
    choice = body.get("tool_choice")
    if isinstance(choice, dict) and choice.get("type") in ("any", "tool"):
        return "Thinking may not be enabled when tool_choice forces tool use."
    assistants = [m for m in body.get("messages") or [] if m.get("role") == "assistant"]
    blocks = assistants[-1].get("content") if assistants else None
    if isinstance(blocks, list) and blocks:
        calls = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
        if calls and blocks[0].get("type") not in ("thinking", "redacted_thinking"):
            return (
                "Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
                "`thinking` is enabled, a final `assistant` message must start with a "
                "thinking block."
            )
    return None
