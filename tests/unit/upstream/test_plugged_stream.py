"""A plugged-in httpx transport whose answer streams (its body not read yet) is read as it
arrives: the chunks come through one by one, as aiohttp's would."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx

from gateway.upstream.http import UpstreamHTTP

PIECES = [b"data: one\n\n", b"data: two\n\n", b"data: [DONE]\n\n"]


class _Streamed(httpx.AsyncByteStream):
    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in PIECES:
            yield piece


def _answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, stream=_Streamed(), headers={"content-type": "text/event-stream"})


async def test_an_unread_streamed_answer_of_a_plugged_transport_comes_chunk_by_chunk() -> None:
    client = UpstreamHTTP(transport=httpx.MockTransport(_answer))
    try:
        response = await client.post("http://upstream.test/v1/chat/completions", {}, b"{}", 5)
        assert response.status_code == 200
        assert [chunk async for chunk in response.chunks()] == PIECES
        await response.aclose()
    finally:
        await client.aclose()
