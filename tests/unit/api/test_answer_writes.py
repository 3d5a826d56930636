"""An answer's head leaves with its first body bytes, in one write (gateway.api.connection):
the bytes are the same, one send instead of two; a head is never held past the loop's next
turn, and one that no body follows goes at once."""

from __future__ import annotations

import asyncio

from gateway.api.cycle import CycleTransport

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n"


class _Socket(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.writes: list[bytes] = []

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes.append(bytes(data))

    def is_closing(self) -> bool:
        return False


class _Protocol:
    discarding = False

    def __init__(self) -> None:
        self.ended = False
        self.loop = asyncio.get_running_loop()

    def end_connection(self) -> None:
        self.ended = True


class _Cycle:
    """The attributes of uvicorn's RequestResponseCycle the transport reads."""

    def __init__(self, method: str = "POST") -> None:
        self.scope = {"method": method}
        self.response_started = False
        self.chunked_encoding: bool | None = None
        self.expected_content_length = 0

    def start(self, length: int | None) -> None:  # what uvicorn sets before the head's write
        self.response_started = True
        self.chunked_encoding = length is None
        self.expected_content_length = length or 0


def _transport() -> tuple[CycleTransport, _Socket, _Protocol]:
    socket, protocol = _Socket(), _Protocol()
    return CycleTransport(socket, protocol), socket, protocol  # type: ignore[arg-type]


async def test_a_whole_answer_is_one_write() -> None:
    transport, socket, _ = _transport()
    for _ in range(2):  # keep-alive: each request's cycle in turn
        cycle = _Cycle()
        transport.begin(cycle)
        cycle.start(2)
        transport.write(HEAD)
        assert socket.writes[-1:] != [HEAD]  # held for its body
        transport.write(b"ok")
        assert socket.writes[-1] == HEAD + b"ok"
    assert len(socket.writes) == 2


async def test_heads_no_body_follows_go_at_once() -> None:
    for method, length in (("HEAD", 2), ("POST", 0)):  # a HEAD answer, an empty body
        transport, socket, _ = _transport()
        cycle = _Cycle(method)
        transport.begin(cycle)
        cycle.start(length)
        transport.write(HEAD)
        assert socket.writes == [HEAD], (method, length)


async def test_a_streams_head_leaves_with_its_first_event() -> None:
    transport, socket, _ = _transport()
    cycle = _Cycle()
    transport.begin(cycle)
    cycle.start(None)  # chunked
    transport.write(b"HTTP/1.1 200 OK\r\n\r\n")
    transport.write(b"5\r\nhello\r\n")
    assert socket.writes == [b"HTTP/1.1 200 OK\r\n\r\n5\r\nhello\r\n"]
    await asyncio.sleep(0)
    assert len(socket.writes) == 1  # the flush that was due finds nothing left to write


async def test_a_head_is_held_no_longer_than_the_loops_next_turn() -> None:
    for length in (None, 2):  # a stream whose first event is not ready, a body being made
        transport, socket, _ = _transport()
        cycle = _Cycle()
        transport.begin(cycle)
        cycle.start(length)
        transport.write(HEAD)
        assert socket.writes == []
        await asyncio.sleep(0)
        assert socket.writes == [HEAD]
        transport.write(b"ok")
        assert socket.writes == [HEAD, b"ok"]


async def test_what_comes_before_the_head_is_written_and_the_head_still_waits_for_its_body() -> (
    None
):
    transport, socket, _ = _transport()
    cycle = _Cycle()
    transport.begin(cycle)
    transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # before the answer starts
    assert socket.writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]
    cycle.start(2)
    transport.write(HEAD)
    transport.write(b"ok")
    assert socket.writes[1:] == [HEAD + b"ok"]


async def test_a_pipelined_requests_cycle_does_not_drop_the_head_in_flight() -> None:
    transport, socket, _ = _transport()
    first, second = _Cycle(), _Cycle()
    transport.begin(first)
    first.start(2)
    transport.write(HEAD)
    transport.begin(second)  # its head arrived while the first answer was being written
    transport.write(b"ok")
    assert socket.writes == [HEAD + b"ok"]
    second.start(2)
    transport.write(HEAD)
    transport.write(b"ok")
    assert socket.writes == [HEAD + b"ok"] * 2


async def test_an_answer_cut_after_its_head_still_writes_the_head_before_the_end() -> None:
    transport, socket, protocol = _transport()
    cycle = _Cycle()
    transport.begin(cycle)
    cycle.start(2)
    transport.write(HEAD)
    transport.close()  # the app failed after the head: uvicorn closes the connection
    assert socket.writes == [HEAD] and protocol.ended
    await asyncio.sleep(0)
    assert socket.writes == [HEAD]  # written once
