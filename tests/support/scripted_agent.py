"""A scripted model for a coding agent (Claude Code): Anthropic's Messages API and an
OpenAI-compatible Chat Completions API on loopback.

Its script: a request that offers the agent's ``Read`` tool and carries no tool result
is answered with a call of ``Read`` on ``read_path``; once the request carries a tool
result, the answer quotes it (``The file says: …``). Any other request (the agent's
title or quota checks) is answered ``ok``. Every answer streams when asked to. It keeps
every request it received.
"""

from __future__ import annotations

import json
from typing import Any

from aiohttp import web

from tests.support.servers import LoopThread, loopback_socket

DONE = "The file says: "


class ScriptedAgentUpstream:
    def __init__(self, read_path: str) -> None:
        self.read_path = read_path
        self.received: list[tuple[str, dict[str, Any]]] = []
        self._thread = LoopThread("scripted-agent")
        self._sock = loopback_socket()
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"
        self._runner: web.AppRunner | None = None
        self._thread.run(self._start())

    def close(self) -> None:
        if self._runner is not None:
            self._thread.run(self._runner.cleanup())
        self._thread.close()
        self._sock.close()

    async def _start(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/anthropic/v1/messages", self._messages)
        app.router.add_post("/anthropic/v1/messages/count_tokens", self._count)
        app.router.add_post("/v1/chat/completions", self._chat)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    def _plan(self, tools: list[str], result: str | None) -> tuple[str, dict[str, Any] | None]:
        """(text, the Read call's input or None)."""
        if result is not None:
            return DONE + result.strip(), None
        if "Read" in tools:
            return "", {"file_path": self.read_path}
        return "ok", None

    async def _count(self, request: web.Request) -> web.Response:
        self.received.append((request.path, await request.json()))
        return web.json_response({"input_tokens": 10})

    # --- Anthropic -------------------------------------------------------------------------

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.received.append((request.path, body))
        tools = [str(t.get("name")) for t in body.get("tools") or []]
        text, call = self._plan(tools, _anthropic_result(body))
        content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
        if call is not None:
            content.append({"type": "tool_use", "id": "toolu_01", "name": "Read", "input": call})
        stop = "tool_use" if call is not None else "end_turn"
        usage = {"input_tokens": 50, "output_tokens": 10}
        message = {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": body.get("model"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": usage,
        }
        if not body.get("stream"):
            return web.json_response(message)
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        start = {
            **message,
            "content": [],
            "stop_reason": None,
            "usage": {**usage, "output_tokens": 1},
        }
        events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
        for index, block in enumerate(content):
            if block["type"] == "text":
                opened = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                opened = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            events.append({"type": "content_block_start", "index": index, "content_block": opened})
            events.append({"type": "content_block_delta", "index": index, "delta": delta})
            events.append({"type": "content_block_stop", "index": index})
        events.append(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 10},
            }
        )
        events.append({"type": "message_stop"})
        for event in events:
            await response.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        await response.write_eof()
        return response

    # --- Chat Completions ------------------------------------------------------------------

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.received.append((request.path, body))
        tools = [str((t.get("function") or {}).get("name")) for t in body.get("tools") or []]
        text, call = self._plan(tools, _chat_result(body))
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        finish = "stop"
        calls = []
        if call is not None:
            function = {"name": "Read", "arguments": json.dumps(call)}
            calls = [{"index": 0, "id": "call_01", "type": "function", "function": function}]
            message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            finish = "tool_calls"
        usage = {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60}
        base = {"id": "chatcmpl-01", "created": 0, "model": body.get("model")}
        if not body.get("stream"):
            choice = {"index": 0, "message": message, "finish_reason": finish}
            return web.json_response(
                {**base, "object": "chat.completion", "choices": [choice], "usage": usage}
            )
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        chunk = {**base, "object": "chat.completion.chunk"}
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": text}] if text else []
        if calls:
            deltas.append({"tool_calls": calls})
        pieces = [
            {**chunk, "choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
        ]
        pieces.append({**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        if (body.get("stream_options") or {}).get("include_usage"):
            pieces.append({**chunk, "choices": [], "usage": usage})
        for piece in pieces:
            await response.write(f"data: {json.dumps(piece)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _anthropic_result(body: dict[str, Any]) -> str | None:
    for message in reversed(body.get("messages") or []):
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return _text_of(block.get("content"))
    return None


def _chat_result(body: dict[str, Any]) -> str | None:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "tool":
            return _text_of(message.get("content"))
    return None


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""
