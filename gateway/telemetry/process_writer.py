"""The telemetry writer off the serving loop (``telemetry.writer: process``, the default).

The serving process only queues and encodes: ``submit`` appends to a deque and returns
(never blocks, never raises, never awaits). A sender task takes up to ``batch_size``
records (waiting at most ``flush_interval`` for a batch to fill, not at all when
``flush()`` or ``stop()`` waits), encodes them under a new batch key and writes the frame
to the writer process (:mod:`gateway.telemetry.writer_child`), which runs the database
statements; the frame is kept until that process acknowledges the batch. The bound
(``max_queue``) covers the records queued and those sent but not yet acknowledged; past
it new records are dropped and counted.

A writer process that ends while the serving process runs (a crash, a kill) is logged,
counted (``gateway_background_task_restarts_total{task="telemetry-writer-process"}``)
and started again after a short backoff, and every unacknowledged batch is sent again, in
order: a batch it had committed finds its key in ``telemetry_batches`` and writes
nothing (:mod:`gateway.telemetry.batches`). ``stop()`` sends what is queued, closes the
process's stdin and waits up to ``stop_timeout`` for the last acknowledgements and its
exit; what is left unacknowledged then is logged and counted as dropped.

A writer process that holds unacknowledged batches and answers nothing (no
acknowledgement, no failed attempt: it reports each one while the database is down) for
``hang_timeout`` seconds is taken as hung (stopped, a statement that never returns, a
deadlocked driver), killed, logged and replaced like one that crashed. A batch that was
the oldest unacknowledged one when ``POISON_ENDINGS`` writer processes in a row ended on
their own after they were set up is taken as what ends them: it is dropped, logged and
counted, and the rows after it are written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable

import msgspec

from gateway.tasks import cancel_and_wait, next_backoff, wait_event
from gateway.telemetry.records import TelemetryRecord, routing_detail
from gateway.telemetry.supervision import (
    POISON_ENDINGS,
    Suspect,
    retry_window,
)
from gateway.telemetry.wire import Ack, Failed, Ready, batch_frame, frame, from_child, read_body
from gateway.telemetry.writer import BatchKeys, QueueFront, WriterSettings
from gateway.telemetry.writer_launch import launch, setup_for

log = logging.getLogger("gateway.telemetry.writer")

RESTART_FIRST_SECONDS = 0.1
RESTART_MAX_SECONDS = 5.0
RESTART_TASK = "telemetry-writer-process"
START_SECONDS = 60.0  # a writer process's imports on a loaded machine: not a hang


def _encode(key: str, batch: list[TelemetryRecord]) -> bytes:
    details = [routing_detail(record) for record in batch]
    bare = [
        msgspec.structs.replace(record, trail=None) if record.trail is not None else record
        for record in batch
    ]
    return batch_frame(key, bare, details)


class ProcessWriter(QueueFront):
    def __init__(
        self,
        url: str,
        settings: WriterSettings | None = None,
        *,
        on_restart: Callable[[str], None] | None = None,
        log_format: str = "text",
    ) -> None:
        settings = settings or WriterSettings()
        self._url = url
        self._settings = settings
        self._on_restart = on_restart
        self._log_format = log_format
        self._keys = BatchKeys()
        self._enabled = settings.enabled
        self._max_queue = settings.max_queue
        self._batch_size = settings.batch_size
        self._queue: deque[TelemetryRecord] = deque()
        # Sent, not yet acknowledged: key -> (frame, rows), in the order sent.
        self._unacked: dict[str, tuple[bytes, int]] = {}
        self._unacked_rows = 0
        self._wake = asyncio.Event()
        self._settled_changed = asyncio.Condition()
        self._accepted = 0
        self._settled = 0
        self._heard = 0  # answers from writer processes (acknowledgements, failed attempts)
        self._urgent = 0
        self._stopping = False
        self._closing = False  # everything sent: the process's stdin is to be closed
        self._stdin: asyncio.StreamWriter | None = None
        self._process: asyncio.subprocess.Process | None = None
        self._sender: asyncio.Task[None] | None = None
        self._owner: asyncio.Task[None] | None = None
        self._answered_at = 0.0  # the last answer, the process's start, or the first batch
        self._ready = False  # the running process said it is set up
        self._killed_hung = False
        self._suspect = Suspect()
        self.written = 0
        self.dropped = 0
        self.failed_batches = 0
        self.rejected = 0
        self.restarts = 0  # writer processes started again after one ended
        self.hung = 0  # writer processes killed for answering nothing
        self.poison = 0  # batches dropped because writer processes kept ending on them

    @property
    def queue_depth(self) -> int:
        """Records queued or sent and not yet acknowledged."""
        return len(self._queue) + self._unacked_rows

    @property
    def pid(self) -> int | None:
        """The writer process's id, while one runs."""
        process = self._process
        return process.pid if process is not None and process.returncode is None else None

    async def start(self) -> None:
        """Start the writer process (it imports while the server starts) and the sender."""
        if not self._enabled or self._sender is not None:
            return
        self._stopping = self._closing = False
        self._owner = asyncio.create_task(self._own_process(), name="telemetry-writer-process")
        self._sender = asyncio.create_task(self._send_loop(), name="telemetry-writer")

    @property
    def flush_patience(self) -> float:
        """Seconds ``flush()`` waits while the writer process says nothing: the retry
        policy's backoff (how long it retries one batch before it gives the batch up and
        answers) plus ``stop_timeout``."""
        return retry_window(self._settings) + self._settings.stop_timeout

    async def flush(self) -> None:
        """Wait until every record submitted so far is written (or given up on), or until
        the writer process has answered nothing (no batch acknowledged, no failed attempt
        reported) for ``flush_patience`` seconds: one that cannot start or hangs. The rows
        it holds then stay held (sent again to the next writer process), not dropped."""
        target = self._accepted
        if self._sender is None or self._sender.done():
            return
        self._urgent += 1
        self._wake.set()
        patience = self.flush_patience
        try:
            async with self._settled_changed:
                while self._settled < target:
                    heard = self._heard
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(patience):
                            await self._settled_changed.wait()
                    if self._heard == heard and self._settled < target:
                        log.warning(
                            "telemetry: flush gave up after %.1f s without an answer from"
                            " the writer process; %d rows are still held",
                            patience,
                            self.queue_depth,
                        )
                        return
        finally:
            self._urgent -= 1

    async def stop(self) -> None:
        """Send everything queued, let the writer process write it and end; gives up
        after ``stop_timeout`` seconds."""
        sender = self._sender
        if sender is None:
            return
        self._stopping = True
        self._wake.set()
        deadline = time.monotonic() + self._settings.stop_timeout
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._settings.stop_timeout):
                await asyncio.shield(sender)
        self._closing = True
        if not self._unacked and not self._queue:
            # Everything it was sent is committed: nothing to wait for (not even its start).
            self._kill()
        self._close_stdin()
        owner = self._owner
        if owner is not None:
            try:
                async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                    await asyncio.shield(owner)
            except TimeoutError:
                await cancel_and_wait(owner)
                self._kill()
                if self._process is not None:
                    await self._process.wait()
        await cancel_and_wait(sender)
        lost = len(self._queue) + self._unacked_rows
        if lost:
            self._queue.clear()
            self._unacked.clear()
            self._unacked_rows = 0
            await self._settle(0, lost)
            log.warning("telemetry writer stopped with %d rows unwritten", lost)
        self._owner = self._sender = None
        self._process = None

    # The sender: batches from the queue to the writer process.

    async def _send_loop(self) -> None:
        while self._queue or not self._stopping:
            if not self._queue:
                self._wake.clear()
                await self._wake.wait()
                continue
            if len(self._queue) < self._batch_size and not (self._stopping or self._urgent):
                self._wake.clear()
                await wait_event(self._wake, self._settings.flush_interval)
            count = min(self._batch_size, len(self._queue))
            batch = [self._queue.popleft() for _ in range(count)]
            key = self._keys.next()
            try:
                data = _encode(key, batch)
            except Exception:  # a bug: these rows are given up on, the sender goes on
                log.exception("telemetry: a batch of %d rows could not be encoded", count)
                await self._settle(0, count)
                continue
            if not self._unacked:
                self._answered_at = time.monotonic()  # the clock starts with what it holds
            self._unacked[key] = (data, count)
            self._unacked_rows += count
            stdin = self._stdin
            if stdin is not None:  # else the process is starting again: it gets them all
                self._write(stdin, data)
                with contextlib.suppress(OSError):
                    await stdin.drain()

    def _write(self, stdin: asyncio.StreamWriter, data: bytes) -> None:
        with contextlib.suppress(OSError):  # a process that ended: the owner starts another
            stdin.write(data)

    def _close_stdin(self) -> None:
        stdin = self._stdin
        if stdin is not None and self._closing:
            with contextlib.suppress(OSError):
                stdin.close()

    def _kill(self) -> None:
        process = self._process
        if process is not None and process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()

    # The owner: the writer process, started again whenever it ends before its time.

    async def _own_process(self) -> None:
        delay = RESTART_FIRST_SECONDS / 2
        while True:
            started = time.monotonic()
            code: int | str = "not started"
            try:
                code = await self._run_process()
            except Exception as exc:  # a spawn that failed, an answer that made no sense
                self._kill()
                code = f"{type(exc).__name__}: {str(exc)[:200]}"
            if self._closing and not self._unacked:
                return
            await self._after_ending()
            delay = next_backoff(delay, time.monotonic() - started, RESTART_FIRST_SECONDS, 30.0)
            delay = min(delay, RESTART_MAX_SECONDS)
            log.warning(
                "telemetry writer process ended (%s) with %d rows unacknowledged;"
                " starting another in %.1f s",
                code,
                self._unacked_rows,
                delay,
            )
            self.restarts += 1
            if self._on_restart is not None:
                self._on_restart(RESTART_TASK)
            await asyncio.sleep(delay)
            if self._closing and not self._unacked:
                return

    async def _run_process(self) -> int:
        """Start a writer process, send it every unacknowledged batch, read its answers
        until it ends (killed when it hangs); its exit status."""
        process = await launch()
        self._process = process
        self._answered_at = time.monotonic()
        self._ready = self._killed_hung = False
        assert process.stdin is not None and process.stdout is not None
        stdin = process.stdin
        self._write(stdin, frame(setup_for(self._url, self._settings, self._log_format)))
        for data, _ in list(self._unacked.values()):  # in the order first sent
            self._write(stdin, data)
        self._stdin = stdin
        self._close_stdin()
        watchdog = asyncio.create_task(self._watch(process))
        try:
            await self._read_answers(process.stdout)
        finally:
            self._stdin = None
            watchdog.cancel()
        return await process.wait()

    async def _watch(self, process: asyncio.subprocess.Process) -> None:
        """Kill the process once it has held batches ``hang_timeout`` seconds unanswered
        (while it starts, before it is set up: ``START_SECONDS`` at least)."""
        timeout = self._settings.hang_timeout
        if timeout <= 0:
            return
        while process.returncode is None:
            await asyncio.sleep(min(1.0, timeout / 4))
            silent = time.monotonic() - self._answered_at
            limit = timeout if self._ready else max(timeout, START_SECONDS)
            if self._unacked and silent > limit and process.returncode is None:
                log.error(
                    "telemetry writer process answered nothing for %.1f s holding %d rows:"
                    " taken as hung, killed",
                    silent,
                    self._unacked_rows,
                )
                self.hung += 1
                self._killed_hung = True
                self._kill()
                return

    async def _after_ending(self) -> None:
        """After a writer process ended: drop the oldest batch it held if it is the one
        that keeps ending them (:class:`~gateway.telemetry.supervision.Suspect`)."""
        oldest = next(iter(self._unacked), None)
        on_its_own = self._ready and not self._killed_hung and oldest is not None
        if not self._suspect.ended(oldest or "", on_its_own) or oldest is None:
            return
        _, rows = self._unacked.pop(oldest)
        self._unacked_rows -= rows
        self.poison += 1
        log.error(
            "telemetry: %d writer processes in a row ended holding the same batch first;"
            " its %d rows are dropped",
            POISON_ENDINGS,
            rows,
        )
        await self._settle(0, rows)

    async def _read_answers(self, stdout: asyncio.StreamReader) -> None:
        while True:
            try:
                body = await read_body(stdout)
            except asyncio.IncompleteReadError:
                return
            message = from_child.decode(body)
            self._answered_at = time.monotonic()
            if isinstance(message, Ready):
                self._ready = True
            elif isinstance(message, Failed):
                self.failed_batches += message.count
                await self._answered()
            elif isinstance(message, Ack):
                await self._acknowledged(message)

    async def _acknowledged(self, ack: Ack) -> None:
        sent = self._unacked.pop(ack.key, None)
        if sent is None:
            return  # acknowledged before (sent again to a new process)
        self._unacked_rows -= sent[1]
        self.rejected += ack.rejected
        await self._settle(ack.written, ack.dropped)
        if self._closing and not self._unacked:
            self._kill()  # the last batch is committed: its exit would only take longer

    async def _answered(self) -> None:
        """A failed attempt reported: the writer process is alive (``flush()`` waits on)."""
        async with self._settled_changed:
            self._heard += 1
            self._settled_changed.notify_all()

    async def _settle(self, written: int, dropped: int) -> None:
        self.written += written
        self.dropped += dropped
        async with self._settled_changed:
            self._heard += 1
            self._settled += written + dropped
            self._settled_changed.notify_all()
