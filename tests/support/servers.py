"""Real servers on loopback for integration tests: the gateway (uvicorn) and a fake upstream.

Each runs its own event loop in a background thread, so tests drive them with
ordinary blocking clients (the official ``openai`` SDK) as a user would.
"""

from __future__ import annotations

import asyncio
import io
import socket
import sys
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import Future
from typing import Any, TypeVar

import uvicorn

T = TypeVar("T")
# Upper bounds only: a passing test never waits for them, and a busy machine (several test
# suites on two cores) can take many seconds to flush a batch or drain a server.
RUN_TIMEOUT = 120.0
STOP_TIMEOUT = 60.0
START_TIMEOUT = 60.0


def loopback_socket() -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(512)
    sock.setblocking(False)
    return sock


def _pending_tasks(loop: asyncio.AbstractEventLoop) -> str:
    """Each task still pending on ``loop``, with where it waits."""
    out = io.StringIO()
    for task in asyncio.all_tasks(loop):
        out.write(f"pending at stop: {task!r}\n")
        task.print_stack(limit=8, file=out)
    return out.getvalue()


class LoopThread:
    """An event loop in a daemon thread; run coroutines on it from the test thread."""

    def __init__(self, name: str) -> None:
        self.name = name  # the thread's name
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = RUN_TIMEOUT) -> T:
        future: Future[T] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return future.result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=10)


class UvicornServer:
    """Serve an ASGI app on 127.0.0.1 with an OS-chosen port."""

    def __init__(
        self, app: Any, name: str = "gateway", options: dict[str, Any] | None = None
    ) -> None:
        """``options``: extra ``uvicorn.Config`` arguments (the gateway's come from
        ``gateway.api.serving.uvicorn_options``, as ``gateway serve`` uses them)."""
        self._sock = loopback_socket()
        self.port: int = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app, log_level="warning", access_log=False, lifespan="on", **(options or {})
        )
        self.server = uvicorn.Server(config)
        self.thread = LoopThread(f"{name}-loop")
        self._serving: Future[None] = asyncio.run_coroutine_threadsafe(
            self.server.serve(sockets=[self._sock]), self.thread.loop
        )
        self._wait_started()

    def _wait_started(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.server.started:
                return
            if self._serving.done():
                self._serving.result()  # raises the startup error
            threading.Event().wait(0.025)
        raise RuntimeError("the server did not start")

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = RUN_TIMEOUT) -> T:
        return self.thread.run(coro, timeout)

    def stop(self) -> None:
        self.server.should_exit = True
        try:
            try:
                self._serving.result(timeout=STOP_TIMEOUT)
            except TimeoutError:
                sys.stderr.write(_pending_tasks(self.thread.loop))  # what held the stop
                raise
        finally:
            self.thread.close()
            self._sock.close()
