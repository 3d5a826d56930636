"""How a telemetry writer process is started: its command and its first frame.

The command names no database: the URL (it may hold a password) travels in the
:class:`~gateway.telemetry.wire.Setup` frame, never in argv or the environment.
"""

from __future__ import annotations

import asyncio
import logging
import sys

from gateway.telemetry.wire import Setup
from gateway.telemetry.writer import WriterSettings

CHILD_MODULE = "gateway.telemetry.writer_child"


async def launch() -> asyncio.subprocess.Process:
    """A new writer process (:mod:`gateway.telemetry.writer_child`) with pipes on its stdin
    and stdout; its stderr is the serving process's, so its log lines join those."""
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        CHILD_MODULE,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=None,
        # A session of its own: a signal to the serving process's group (Ctrl-C,
        # kill -TERM -PGID) never reaches it, not even before it ignores the signals.
        # (uvloop takes start_new_session, not process_group.)
        start_new_session=True,
    )


def setup_for(url: str, settings: WriterSettings, log_format: str) -> Setup:
    """The first frame a writer process is sent: the database, the retry policy and the
    serving process's logging."""
    return Setup(
        url=url,
        retry_attempts=settings.retry_attempts,
        retry_delay=settings.retry_delay,
        retry_max_delay=settings.retry_max_delay,
        log_format=log_format,
        log_level=logging.getLevelName(logging.getLogger().getEffectiveLevel()),
    )
