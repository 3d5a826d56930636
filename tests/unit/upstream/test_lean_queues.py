"""An answer's aiohttp deques are swapped for lists (``gateway.upstream.aiohttp_answer.LeanQueue``,
about 660 bytes less each for an open stream): the swap happens on the aiohttp installed
(this fails if it renames or retypes them) and a body still reads whole and in order,
whether it arrives in many small HTTP chunks, in large ones, or with a length; and an
open answer's headers are kept parsed only, not also as aiohttp's bytes. A real aiohttp
server on loopback."""

from __future__ import annotations

import asyncio
import collections
from collections.abc import AsyncIterator

import aiohttp
import pytest
from aiohttp import web
from aiohttp.client_proto import ResponseHandler

from gateway.upstream.aiohttp_answer import CHUNK_BYTES, LeanQueue, lean_queues
from gateway.upstream.http import UpstreamHTTP

SMALL = [b"data: %d\n\n" % i for i in range(300)]
LARGE = [bytes([65 + i % 26]) * 50_000 for i in range(40)]


async def _chunked(request: web.Request) -> web.StreamResponse:
    parts = SMALL if request.query["size"] == "small" else LARGE
    answer = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await answer.prepare(request)
    for index, part in enumerate(parts):
        await answer.write(part)
        if index % 50 == 0:
            await asyncio.sleep(0.01)  # some parts arrive alone, others together
    await answer.write_eof()
    return answer


async def _late(request: web.Request) -> web.StreamResponse:
    answer = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await answer.prepare(request)
    await asyncio.sleep(0.1)  # the head alone first
    for part in SMALL[:5]:
        await answer.write(part)
    await answer.write_eof()
    return answer


async def _whole(request: web.Request) -> web.Response:
    return web.Response(body=b"".join(LARGE), headers={f"x-h{i}": "v" * 30 for i in range(12)})


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/chunked", _chunked)
    app.router.add_post("/whole", _whole)
    app.router.add_post("/late", _late)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


def _type(owner: object, name: str) -> type:
    return type(getattr(owner, name))


def test_a_lean_queue_is_a_deque_where_aiohttp_uses_one() -> None:
    lean, deque = LeanQueue(), collections.deque[int]()
    for queue in (lean, deque):
        queue.append(2)
        queue.append(3)
        queue.appendleft(1)
        queue[0] = 0
        assert (queue[0], queue[-1], len(queue), bool(queue)) == (0, 3, 3, True)
        assert [queue.popleft() for _ in range(3)] == [0, 2, 3]
        assert not queue
        with pytest.raises(IndexError):
            queue.popleft()


async def test_aiohttp_s_queues_are_swapped_and_what_they_hold_is_kept(upstream: str) -> None:
    async with aiohttp.ClientSession() as session:
        response = await session.post(f"{upstream}/chunked?size=small", data=b"{}")
        await asyncio.sleep(0.05)  # some of the body is held already
        content = response.content
        assert response.connection is not None
        protocol = response.connection.protocol
        assert isinstance(protocol, ResponseHandler)
        queues = ((content, "_buffer"), (content, "_http_chunk_splits"), (protocol, "_buffer"))
        for owner, name in queues:
            assert _type(owner, name) is collections.deque, name
        held = list(content._buffer)
        assert held  # the swap has something to keep
        lean_queues(content, protocol, chunked=True)
        for owner, name in queues:
            assert _type(owner, name) is LeanQueue, name
        assert list(content._buffer) == held
        body = b"".join([chunk async for chunk in content.iter_chunked(CHUNK_BYTES)])
        assert body == b"".join(SMALL)
        response.release()


async def test_a_chunked_body_whose_first_chunk_is_not_in_gets_a_lean_list(
    upstream: str,
) -> None:
    async with aiohttp.ClientSession() as session:
        response = await session.post(f"{upstream}/late", data=b"{}")
        content = response.content
        assert content._http_chunk_splits is None  # aiohttp makes it at the first chunk
        lean_queues(content, None, chunked=True)
        assert _type(content, "_http_chunk_splits") is LeanQueue
        body = b"".join([chunk async for chunk in content.iter_chunked(CHUNK_BYTES)])
        assert body == b"".join(SMALL[:5])
        assert _type(content, "_http_chunk_splits") is LeanQueue  # aiohttp kept it
        response.release()


async def test_an_open_answer_keeps_its_headers_once(upstream: str) -> None:
    client = UpstreamHTTP()
    try:
        response = await client.post(f"{upstream}/whole", {}, b"{}", 5.0)
        try:
            raw = response._response.raw_headers  # type: ignore[attr-defined]
            assert raw == ()  # aiohttp's bytes copy, dropped (fails if aiohttp renames it)
            assert response.headers["X-H11"] == "v" * 30  # the parsed ones, kept
            assert b"".join([chunk async for chunk in response.chunks()]) == b"".join(LARGE)
        finally:
            await response.aclose()
    finally:
        await client.aclose()


@pytest.mark.parametrize("path", ["chunked?size=small", "chunked?size=large", "whole"])
async def test_bodies_read_whole_and_in_order_over_a_reused_connection(
    upstream: str, path: str
) -> None:
    client = UpstreamHTTP()
    expected = b"".join(SMALL if path.endswith("small") else LARGE)
    try:
        for _ in range(3):  # the connection's queue, swapped once, serves the next answers
            response = await client.post(f"{upstream}/{path}", {}, b"{}", 5.0)
            try:
                chunks = [chunk async for chunk in response.chunks()]
            finally:
                await response.aclose()
            assert b"".join(chunks) == expected
            assert max(len(chunk) for chunk in chunks) <= CHUNK_BYTES
    finally:
        await client.aclose()
