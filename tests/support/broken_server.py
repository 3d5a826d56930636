"""A TCP server that breaks HTTP on purpose: garbage status lines, or a reset at once."""

from __future__ import annotations

import asyncio
import socket

from tests.support.servers import LoopThread, loopback_socket


class BrokenServer:
    def __init__(self, mode: str) -> None:
        self.mode = mode  # "garbage" or "reset"
        self.connections = 0
        self._thread = LoopThread("broken-server")
        self._sock = loopback_socket()
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._server = self._thread.run(self._start())

    async def _start(self) -> asyncio.Server:
        return await asyncio.start_server(self._handle, sock=self._sock)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        await reader.readuntil(b"\r\n\r\n")
        if self.mode == "reset":
            raw = writer.get_extra_info("socket")
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
            writer.transport.abort()
            return
        writer.write(b"HTTP/1.1 2OO WHAT\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            await self._server.wait_closed()

        self._thread.run(stop())
        self._thread.close()
