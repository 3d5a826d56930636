"""A TCP forwarder on loopback that can be switched off and on: a Redis that goes away.

``down()`` closes the listening socket and cuts every open connection (new ones are
refused, as by a stopped server); ``up()`` listens again on the same port. It runs in a
process of its own (``python -m tests.support.tcp_proxy HOST PORT``, driven by lines on
its stdin), so a busy test process never slows what it forwards.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

ROOT = Path(__file__).resolve().parents[2]  # where ``tests`` is importable


class TcpProxy:
    def __init__(self, target_host: str, target_port: int) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.tcp_proxy", target_host, str(target_port)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )
        self.port = int(self._answer())

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
        self._command("up")

    def down(self) -> None:
        self._command("down")

    def close(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
        self._process.wait(timeout=10)

    def _command(self, command: str) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(command + "\n")
        self._process.stdin.flush()
        assert self._answer() == "ok"

    def _answer(self) -> str:
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line:
            raise RuntimeError("the TCP proxy process ended")
        return line.strip()


class _Forwarder:
    def __init__(self, target: tuple[str, int]) -> None:
        self._target = target
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    async def listen(self) -> None:
        if self._server is None:
            self._server = await asyncio.start_server(
                self._forward, "127.0.0.1", self.port, reuse_address=True
            )
            self.port = self._server.sockets[0].getsockname()[1]

    async def close(self) -> None:
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


async def _serve(host: str, port: int) -> None:
    forwarder = _Forwarder((host, port))
    await forwarder.listen()
    print(forwarder.port, flush=True)
    loop = asyncio.get_running_loop()
    while line := await loop.run_in_executor(None, sys.stdin.readline):
        if line.strip() == "down":
            await forwarder.close()
        elif line.strip() == "up":
            await forwarder.listen()
        print("ok", flush=True)
    await forwarder.close()


if __name__ == "__main__":
    asyncio.run(_serve(sys.argv[1], int(sys.argv[2])))
