"""The fake OpenAI Responses API (``POST /v1/responses``): whole answers and typed-event
streams, text or a function call, with usage; written by hand after OpenAI's API
reference, independent of the gateway's own translation."""

from __future__ import annotations

import json
import time
from typing import Any

from aiohttp import web

from tests.support.fake_shapes import Behavior, words


class ResponsesRoutes:
    """Mixed into FakeUpstream: the route ``/v1/responses``."""

    async def _record(self, request: web.Request) -> tuple[dict[str, Any], Behavior]:
        raise NotImplementedError

    @staticmethod
    def _failure(behavior: Behavior) -> web.Response | None:
        raise NotImplementedError

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        body, behavior = await self._record(request)
        failure = self._failure(behavior)
        if failure is not None:
            return failure
        model = f"{body.get('model')}-2026-01-01"
        if body.get("stream"):
            return await _stream(request, body, behavior, model)
        response = _response(body, model, "completed")
        response["output"] = [_output_item(behavior, "completed")]
        if behavior.report_usage:
            response["usage"] = _usage(behavior)
        return web.json_response(response)


def _response(body: dict[str, Any], model: str, status: str) -> dict[str, Any]:
    return {
        "id": "resp_fake",
        "object": "response",
        "created_at": int(time.time()),
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": body.get("instructions"),
        "max_output_tokens": body.get("max_output_tokens"),
        "model": model,
        "output": [],
        "parallel_tool_calls": True,
        "previous_response_id": body.get("previous_response_id"),
        "store": bool(body.get("store", True)),
        "temperature": body.get("temperature", 1.0),
        "text": body.get("text") or {"format": {"type": "text"}},
        "tool_choice": body.get("tool_choice", "auto"),
        "tools": body.get("tools") or [],
        "top_p": body.get("top_p", 1.0),
        "truncation": "disabled",
        "metadata": {},
    }


def _output_item(behavior: Behavior, status: str, text: str | None = None) -> dict[str, Any]:
    if behavior.tool_call:
        return {
            "type": "function_call",
            "id": "fc_fake",
            "call_id": "call_fake_1",
            "name": "lookup",
            "arguments": "" if status == "in_progress" else '{"q": "x"}',
            "status": status,
        }
    content = [] if text is None else [_text_part(text)]
    return {
        "type": "message",
        "id": "msg_fake",
        "status": status,
        "role": "assistant",
        "content": content if status == "in_progress" else [_text_part(behavior.content)],
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _usage(behavior: Behavior) -> dict[str, Any]:
    return {
        "input_tokens": behavior.prompt_tokens,
        "input_tokens_details": {"cached_tokens": behavior.cached_tokens, "cache_write_tokens": 0},
        "output_tokens": behavior.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": behavior.prompt_tokens + behavior.completion_tokens,
    }


async def _stream(
    request: web.Request, body: dict[str, Any], behavior: Behavior, model: str
) -> web.StreamResponse:
    response = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await response.prepare(request)
    sequence = 0

    async def send(payload: dict[str, Any]) -> None:
        nonlocal sequence
        payload["sequence_number"] = sequence
        sequence += 1
        data = f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n"
        await response.write(data.encode())

    started = _response(body, model, "in_progress")
    await send({"type": "response.created", "response": started})
    await send({"type": "response.in_progress", "response": started})
    item = _output_item(behavior, "in_progress", text="")
    await send({"type": "response.output_item.added", "output_index": 0, "item": item})
    where = {"item_id": item["id"], "output_index": 0}
    pieces = behavior.tool_json_pieces if behavior.tool_call else words(behavior.content)
    if not behavior.tool_call:
        part = _text_part("")
        await send(
            {"type": "response.content_part.added", **where, "content_index": 0, "part": part}
        )
    for index, piece in enumerate(pieces):
        if behavior.cut_after is not None and index >= behavior.cut_after:
            assert request.transport is not None
            request.transport.abort()
            return response
        if behavior.tool_call:
            await send({"type": "response.function_call_arguments.delta", **where, "delta": piece})
        else:
            delta = {"content_index": 0, "delta": piece, "logprobs": []}
            await send({"type": "response.output_text.delta", **where, **delta})
    done = _output_item(behavior, "completed")
    if behavior.tool_call:
        arguments = "".join(pieces)
        done["arguments"] = arguments
        await send(
            {
                "type": "response.function_call_arguments.done",
                **where,
                "name": "lookup",
                "arguments": arguments,
            }
        )
    else:
        text = "".join(pieces)
        ends = {"content_index": 0, "text": text, "logprobs": []}
        await send({"type": "response.output_text.done", **where, **ends})
        part = _text_part(text)
        await send(
            {"type": "response.content_part.done", **where, "content_index": 0, "part": part}
        )
    await send({"type": "response.output_item.done", "output_index": 0, "item": done})
    final = _response(body, model, "completed")
    final["output"] = [done]
    if behavior.report_usage:
        final["usage"] = _usage(behavior)
    await send({"type": "response.completed", "response": final})
    await response.write_eof()
    return response
