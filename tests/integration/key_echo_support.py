"""An upstream that echoes the credential it was sent in every successful answer: in
``model`` and in the generated text, whole and streamed. In a stream the event holding
the key goes out in two TCP writes that split the key in the middle, so only a relay
that looks at whole events can catch it. ``spelling="escaped"`` writes the key as JSON
may spell it (its first letter as ``\\u0073``, every ``/`` as ``\\/``)."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from aiohttp import web

from tests.support.servers import LoopThread, loopback_socket

TEXT = "Your key is {key}."


class KeyEchoUpstream:
    def __init__(self) -> None:
        self.spelling = "plain"
        self.streams_split = 0  # events written in two writes, the key cut between them
        self._thread = LoopThread("key-echo-upstream")
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
        app = web.Application()
        for path, handler in (
            ("/v1/chat/completions", self._chat),
            ("/v1/completions", self._completions),
            ("/v1/embeddings", self._embeddings),
            ("/v1/responses", self._responses),
            ("/anthropic/v1/messages", self._messages),
        ):
            app.router.add_post(path, handler)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        await web.SockSite(self._runner, self._sock).start()

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        key, body = await _key_and_body(request)
        base = {"id": "chatcmpl-echo", "created": int(time.time()), "model": f"echo-{key}"}
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        if not body.get("stream"):
            message = {"role": "assistant", "content": TEXT.format(key=key)}
            choice = {"index": 0, "message": message, "finish_reason": "stop"}
            return self._whole(
                {**base, "object": "chat.completion", "choices": [choice], "usage": usage}, key
            )
        chunk = {**base, "object": "chat.completion.chunk"}
        deltas = [{"role": "assistant", "content": TEXT.format(key=key)}, {}]
        events = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            for delta, finish in zip(deltas, [None, "stop"], strict=True)
        ]
        events.append({**chunk, "choices": [], "usage": usage})
        return await self._stream(request, key, [(None, e) for e in events], done=True)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        key, body = await _key_and_body(request)
        base = {"id": "cmpl-echo", "object": "text_completion", "model": f"echo-{key}"}
        choice = {"index": 0, "text": TEXT.format(key=key), "finish_reason": "stop"}
        usage = {"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}
        if not body.get("stream"):
            return self._whole({**base, "choices": [choice], "usage": usage}, key)
        events = [{**base, "choices": [choice]}, {**base, "choices": [], "usage": usage}]
        return await self._stream(request, key, [(None, e) for e in events], done=True)

    async def _embeddings(self, request: web.Request) -> web.StreamResponse:
        key, _ = await _key_and_body(request)
        answer = {
            "object": "list",
            "data": [{"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}],
            "model": f"echo-{key}",
            "usage": {"prompt_tokens": 3, "total_tokens": 3},
        }
        return self._whole(answer, key)

    async def _responses(self, request: web.Request) -> web.StreamResponse:
        key, body = await _key_and_body(request)
        text = TEXT.format(key=key)
        part = {"type": "output_text", "text": text, "annotations": []}
        item = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant"}
        response = {
            "id": "resp_echo",
            "object": "response",
            "created_at": int(time.time()),
            "model": f"echo-{key}",
            "status": "completed",
            "output": [{**item, "content": [part]}],
            "usage": {"input_tokens": 3, "output_tokens": 4, "total_tokens": 7},
        }
        if not body.get("stream"):
            return self._whole(response, key)
        where = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {**response, "status": "in_progress"}},
            {"type": "response.output_text.delta", **where, "delta": text},
            {"type": "response.completed", "response": response},
        ]
        numbered = [{**e, "sequence_number": n} for n, e in enumerate(events)]
        return await self._stream(request, key, [(e["type"], e) for e in numbered], done=False)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        key, body = await _key_and_body(request)
        text = TEXT.format(key=key)
        message = {"id": "msg_echo", "type": "message", "role": "assistant", "model": f"echo-{key}"}
        if not body.get("stream"):
            whole = {
                **message,
                "content": [{"type": "text", "text": text}],
                "stop_reason": "end_turn",
                "usage": {"input_tokens": 3, "output_tokens": 4},
            }
            return self._whole(whole, key)
        start = {**message, "content": [], "usage": {"input_tokens": 3, "output_tokens": 0}}
        events: list[dict[str, Any]] = [
            {"type": "message_start", "message": start},
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
            {"type": "content_block_stop", "index": 0},
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn"},
                "usage": {"output_tokens": 4},
            },
            {"type": "message_stop"},
        ]
        return await self._stream(request, key, [(e["type"], e) for e in events], done=False)

    def _whole(self, answer: dict[str, Any], key: str) -> web.Response:
        return web.Response(
            body=self._spelt(json.dumps(answer), key), content_type="application/json"
        )

    async def _stream(
        self,
        request: web.Request,
        key: str,
        events: list[tuple[str | None, dict[str, Any]]],
        *,
        done: bool,
    ) -> web.StreamResponse:
        response = web.StreamResponse(headers={"content-type": "text/event-stream"})
        await response.prepare(request)
        for name, event in events:
            head = f"event: {name}\n" if name else ""
            block = self._spelt(f"{head}data: {json.dumps(event)}\n\n", key)
            cut = block.find(self._spelt(key, key))
            if cut < 0:
                await response.write(block)
                continue
            cut += len(key) // 2
            await response.write(block[:cut])  # the key's first half, then its second
            await asyncio.sleep(0.05)  # so the gateway reads the halves apart
            await response.write(block[cut:])
            self.streams_split += 1
        if done:
            await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response

    def _spelt(self, text: str, key: str) -> bytes:
        if self.spelling == "escaped":
            text = text.replace(key, "\\u0073" + key[1:].replace("/", "\\/"))
        return text.encode()


async def _key_and_body(request: web.Request) -> tuple[str, dict[str, Any]]:
    """The credential the gateway sent (bearer or Anthropic's header) and the body."""
    key = request.headers.get("x-api-key") or request.headers["authorization"][7:]
    return key, await request.json()
