"""SIGTERM: leave the load balancer's rotation before closing (docs/operations.md, "Stopping").

uvicorn answers SIGTERM by closing its listening socket at once: a load balancer then
sees refused connections rather than a failing readiness check, and may still be
sending calls. With ``server.shutdownDrainSeconds`` above 0, the first SIGTERM first
marks the process draining: ``/readyz`` answers 503 (``"draining"``) while every call,
new ones included, is still served; once the drain has lasted that long the signal goes
on to uvicorn, which closes the listener and gives running calls
``server.shutdownGraceSeconds`` (``timeout_graceful_shutdown``) to end. A second SIGTERM,
or SIGINT, ends the drain at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger("gateway")

Handler = Callable[[int, FrameType | None], Any]


class Drain:
    """Whether this process is draining; set by :func:`install`."""

    def __init__(self) -> None:
        self.started_at: float | None = None  # monotonic

    @property
    def draining(self) -> bool:
        return self.started_at is not None

    def begin(self) -> None:
        if self.started_at is None:
            self.started_at = time.monotonic()


def install(drain: Drain, seconds: float) -> Callable[[], None]:
    """Put the drain in front of the SIGTERM handler uvicorn installed; the function that
    takes it away again. Nothing to do without a drain, or off the main thread (an
    embedded server has no signals)."""
    if seconds <= 0 or threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.getsignal(signal.SIGTERM)
    if not callable(previous):  # no handler of uvicorn's to pass the signal on to
        return lambda: None
    loop = asyncio.get_running_loop()
    passed_on = False

    def pass_on(sig: int, frame: FrameType | None) -> None:
        nonlocal passed_on
        if not passed_on:
            passed_on = True
            previous(sig, frame)

    def on_term(sig: int, frame: FrameType | None) -> None:
        if drain.draining:  # a second SIGTERM: stop draining now
            pass_on(sig, frame)
            return
        drain.begin()
        log.info(
            "SIGTERM: draining for %g s (/readyz answers 503, calls are still served), "
            "then stopping",
            seconds,
        )
        loop.call_soon_threadsafe(loop.call_later, seconds, pass_on, sig, None)

    signal.signal(signal.SIGTERM, on_term)

    def uninstall() -> None:
        with contextlib.suppress(ValueError):
            if signal.getsignal(signal.SIGTERM) is on_term:
                signal.signal(signal.SIGTERM, previous)

    return uninstall
