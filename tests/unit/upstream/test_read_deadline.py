"""A body's waits for bytes are bounded (the provider's ``timeoutSeconds``) by one lazy
deadline per answer instead of aiohttp's timer per read: a body that goes quiet for longer
fails as aiohttp fails it, one whose pauses are each shorter completes however long it
lasts, and a gateway slow to take what arrived is not the upstream's silence. A real
aiohttp server on loopback."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

import aiohttp
import pytest
from aiohttp import web

from gateway.upstream import aiohttp_answer
from gateway.upstream.http import TRANSPORT_ERRORS, UpstreamHTTP

TIMEOUT = 0.4


async def _paced(request: web.Request) -> web.StreamResponse:
    pauses = [float(p) for p in request.query["pauses"].split(",")]
    answer = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await answer.prepare(request)
    for index, pause in enumerate(pauses):
        await asyncio.sleep(pause)
        await answer.write(b"data: %d\n\n" % index)
    await answer.write_eof()
    return answer


async def _big(request: web.Request) -> web.StreamResponse:
    answer = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await answer.prepare(request)
    for _ in range(64):
        await answer.write(b"x" * 65536)
    await answer.write_eof()
    return answer


@pytest.fixture
async def upstream() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/paced", _paced)
    app.router.add_post("/big", _big)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()


async def _read(client: UpstreamHTTP, url: str) -> list[bytes]:
    response = await client.post(url, {}, b"{}", TIMEOUT)
    try:
        return [chunk async for chunk in response.chunks()]
    finally:
        await response.aclose()


async def test_pauses_each_shorter_than_the_bound_complete_a_body_longer_than_it(
    upstream: str,
) -> None:
    client = UpstreamHTTP()
    try:
        pauses = ",".join(["0.15"] * 8)  # 1.2 s in all, three times the bound
        chunks = await _read(client, f"{upstream}/paced?pauses={pauses}")
        assert b"".join(chunks) == b"".join(b"data: %d\n\n" % i for i in range(8))
    finally:
        await client.aclose()


async def test_a_body_quiet_for_longer_than_the_bound_fails_as_aiohttp_fails_it(
    upstream: str,
) -> None:
    client = UpstreamHTTP()
    try:
        got: list[bytes] = []
        response = await client.post(f"{upstream}/paced?pauses=0,0.05,3", {}, b"{}", TIMEOUT)
        with pytest.raises(TRANSPORT_ERRORS) as caught:
            async for chunk in response.chunks():
                got.append(chunk)
        await response.aclose()
        assert isinstance(caught.value, aiohttp.ServerTimeoutError)
        assert b"".join(got) == b"data: 0\n\ndata: 1\n\n"
        # The connection is not reused for the next call: that one is bounded as well.
        chunks = await _read(client, f"{upstream}/paced?pauses=0")
        assert chunks == [b"data: 0\n\n"]
    finally:
        await client.aclose()


async def test_a_reader_slower_than_the_bound_is_not_an_upstream_silence(upstream: str) -> None:
    client = UpstreamHTTP()
    try:
        response = await client.post(f"{upstream}/big", {}, b"{}", TIMEOUT)
        total = 0
        try:
            async for chunk in response.chunks():
                total += len(chunk)
                if total == len(chunk):  # the first chunk: aiohttp fills and pauses meanwhile
                    await asyncio.sleep(3 * TIMEOUT)
        finally:
            await response.aclose()
        assert total == 64 * 65536
    finally:
        await client.aclose()


class _Clock:
    """A loop's time and timers, moved by hand: where a resume falls between two looks of
    the deadline decides this case, and a real socket cannot place it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.timers: list[tuple[float, Callable[[], None]]] = []

    def time(self) -> float:
        return self.now

    def call_at(self, when: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(self, (when, callback))
        self.timers.append(timer.entry)
        return timer

    def advance_to(self, until: float) -> None:
        """Run the timers due up to ``until`` (the deadline keeps one at a time)."""
        while self.timers and min(t for t, _ in self.timers) <= until:
            self.timers.sort(key=lambda timer: timer[0])
            when, callback = self.timers.pop(0)
            self.now = when
            callback()
        self.now = until


class _Timer:
    def __init__(self, clock: _Clock, entry: tuple[float, Callable[[], None]]) -> None:
        self.clock, self.entry = clock, entry

    def cancel(self) -> None:
        if self.entry in self.clock.timers:
            self.clock.timers.remove(self.entry)


class _Protocol:
    def __init__(self) -> None:
        self.read_timeout: float | None = TIMEOUT
        self.transport: object | None = object()
        self._reading_paused = False
        self._buffer_paused = False
        self.failed: BaseException | None = None

    def set_exception(self, error: BaseException) -> None:
        self.failed = error


class _Content:
    def __init__(self) -> None:
        self.total_bytes = 0
        self.failed: BaseException | None = None

    def is_eof(self) -> bool:
        return False

    def exception(self) -> BaseException | None:
        return self.failed

    def set_exception(self, error: BaseException) -> None:
        self.failed = error


def test_the_silence_after_a_pause_of_reading_is_counted_from_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """aiohttp's timer starts again when reading resumes: a body whose upstream is quiet for
    less than the bound after the gateway took what it held has not timed out, wherever the
    resume falls between two looks of the deadline."""
    clock = _Clock()
    monkeypatch.setattr(aiohttp_answer.asyncio, "get_running_loop", lambda: clock)
    protocol, content = _Protocol(), _Content()
    deadline = aiohttp_answer.ReadDeadline(protocol, content, TIMEOUT)  # type: ignore[arg-type]
    step = TIMEOUT / aiohttp_answer.ReadDeadline.CHECKS
    assert protocol.read_timeout is None  # the connection's own timer is off
    protocol._reading_paused = True  # the gateway's client is slow: aiohttp stops reading
    clock.advance_to(3 * step + step / 10)  # the last look saw it paused
    protocol._reading_paused = False  # what was held is taken; no byte is pending
    resumed = 4 * step - step / 10
    clock.advance_to(resumed)
    clock.advance_to(resumed + TIMEOUT - step / 10)  # quiet for less than the bound since
    assert content.failed is None and protocol.failed is None
    clock.advance_to(resumed + TIMEOUT + 2 * step)  # and past it: it fails as aiohttp does
    assert isinstance(content.failed, aiohttp.SocketTimeoutError)
    assert protocol.failed is content.failed
    deadline.stop()
