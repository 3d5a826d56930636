"""The lean event uvicorn's per-connection and per-request events are swapped for behaves
as ``asyncio.Event`` where uvicorn uses one: a writer blocked on a client that stopped
reading waits until the socket drains, a request's body waiter wakes on ``set``."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.flow_control import FlowControl

from gateway.api.cycle import LeanEvent, PipelinedQueue


class _Transport:
    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


async def test_set_wakes_every_waiter_and_clear_makes_the_next_wait_block() -> None:
    event = LeanEvent()
    assert not event.is_set()
    waiters = [asyncio.create_task(event.wait()) for _ in range(3)]
    await asyncio.sleep(0)
    assert not any(waiter.done() for waiter in waiters)
    event.set()
    assert await asyncio.gather(*waiters) == [True, True, True]
    assert await event.wait() is True  # set: at once
    event.clear()
    late = asyncio.create_task(event.wait())
    await asyncio.sleep(0)
    assert not late.done()
    event.set()
    assert await late is True


async def test_a_cancelled_waiter_leaves_the_others_waiting() -> None:
    event = LeanEvent()
    gone = asyncio.create_task(event.wait())
    kept = asyncio.create_task(event.wait())
    await asyncio.sleep(0)
    gone.cancel()
    await asyncio.gather(gone, return_exceptions=True)
    await asyncio.sleep(0)
    assert not kept.done()
    event.set()
    assert await kept is True


async def test_uvicorn_s_flow_control_drains_once_writing_resumes() -> None:
    flow = FlowControl(_Transport())  # type: ignore[arg-type]
    writable = LeanEvent()
    writable.set()
    flow._is_writable_event = writable  # type: ignore[assignment]  # as EdgeProtocol does
    await flow.drain()  # writable: at once
    flow.pause_writing()
    drained = asyncio.create_task(flow.drain())
    await asyncio.sleep(0.01)
    assert not drained.done()
    flow.resume_writing()
    await asyncio.wait_for(drained, 5)


def test_the_pipeline_queue_is_first_in_first_out_as_uvicorn_uses_it() -> None:
    queue: Any = PipelinedQueue()
    assert not queue
    queue.appendleft("first")
    queue.appendleft("second")
    assert queue.pop() == "first" and queue.pop() == "second" and not queue
