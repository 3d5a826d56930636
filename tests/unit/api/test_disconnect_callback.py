"""A stream's disconnect callback (``EdgeProtocol.on_disconnect``): called once when the
connection is lost while it is set, never after it is unset, including when the connection
was already closing when it was set (the call then waits for the loop's next turn)."""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.config import Config
from uvicorn.server import ServerState

from gateway.api.connection import EdgeLimits, EdgeProtocol
from gateway.domain.settings import ServerSettings


async def _app(scope: Any, receive: Any, send: Any) -> None: ...


class _Socket(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.closing = False

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default

    def write(self, data: bytes | bytearray | memoryview) -> None: ...

    def close(self) -> None:
        self.closing = True

    def pause_reading(self) -> None: ...

    def resume_reading(self) -> None: ...


def _protocol() -> tuple[EdgeProtocol, _Socket]:
    config = Config(app=_app, lifespan="off", log_config=None)
    limits = EdgeLimits.from_settings(ServerSettings())
    protocol = EdgeProtocol(config, ServerState(), {}, asyncio.get_running_loop(), limits=limits)
    socket = _Socket()
    protocol.connection_made(socket)
    return protocol, socket


async def test_a_lost_connection_calls_the_callback_set_once() -> None:
    protocol, socket = _protocol()
    calls: list[int] = []
    protocol.on_disconnect(lambda: calls.append(1))
    socket.closing = True
    protocol.connection_lost(None)
    protocol.connection_lost(None)
    assert calls == [1]


async def test_an_unset_callback_is_not_called() -> None:
    protocol, socket = _protocol()
    calls: list[int] = []
    protocol.on_disconnect(lambda: calls.append(1))
    protocol.on_disconnect(None)
    socket.closing = True
    protocol.connection_lost(None)
    await asyncio.sleep(0)
    assert calls == []


async def test_a_closing_connection_calls_at_the_next_turn_unless_unset_first() -> None:
    protocol, socket = _protocol()
    socket.closing = True
    calls: list[str] = []
    protocol.on_disconnect(lambda: calls.append("kept"))
    assert calls == []  # not from inside on_disconnect
    await asyncio.sleep(0)
    assert calls == ["kept"]
    protocol.on_disconnect(None)

    # A relay that ends without suspending unsets it in the same turn: never called.
    protocol.on_disconnect(lambda: calls.append("unset"))
    protocol.on_disconnect(None)
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    protocol.connection_lost(None)
    assert calls == ["kept"]
