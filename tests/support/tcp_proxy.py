"""A TCP forwarder on loopback that can be switched off and on: a Redis that goes away.

``down()`` closes the listening socket and cuts every open connection (new ones are
refused, as by a stopped server); ``up()`` listens again on the same port.
"""

from __future__ import annotations

import asyncio
import contextlib
from urllib.parse import urlsplit, urlunsplit

from tests.support.servers import LoopThread


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._thread = LoopThread("tcp-proxy")
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0
        self.up()

    @classmethod
    def for_url(cls, url: str) -> tuple[TcpProxy, str]:
        """A proxy in front of ``url``'s host and port, and ``url`` pointed at the proxy."""
        parts = urlsplit(url)
        proxy = cls(parts.hostname or "127.0.0.1", parts.port or 6379)
        netloc = f"127.0.0.1:{proxy.port}"
        if parts.username or parts.password:
            netloc = f"{parts.username or ''}:{parts.password or ''}@{netloc}"
        return proxy, urlunsplit(parts._replace(netloc=netloc))

    def up(self) -> None:
        self._thread.run(self._listen())

    def down(self) -> None:
        self._thread.run(self._close())

    def close(self) -> None:
        self.down()
        self._thread.close()

    async def _listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._forward, "127.0.0.1", self.port, reuse_address=True
            )
            self.port = self._server.sockets[0].getsockname()[1]

    async def _close(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for writer in list(self._writers):
            writer.transport.abort()
        self._writers.clear()
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 2)

    async def _forward(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            target_reader, target_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.transport.abort()
            return
        self._writers.update((writer, target_writer))
        await asyncio.gather(
            _pipe(reader, target_writer), _pipe(target_reader, writer), return_exceptions=True
        )
        self._writers.difference_update((writer, target_writer))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        writer.transport.abort()
