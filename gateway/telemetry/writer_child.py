"""The telemetry writer process (``telemetry.writer: process``): ``python -m
gateway.telemetry.writer_child``, one per serving process, started by it.

It reads a :class:`~gateway.telemetry.wire.Setup` and then batches on stdin, writes each
batch with :class:`~gateway.telemetry.batches.BatchWriter` (the same transaction, retries
and set-aside as the writer on the loop) in the order received, and answers each with an
:class:`~gateway.telemetry.wire.Ack` on stdout (a :class:`~gateway.telemetry.wire.Ready`
first, once it is set up). SIGINT and SIGTERM are ignored: a signal
to the whole process group stops the serving process, which sends what it still holds and
closes stdin; at the end of stdin this process writes everything it received (or gives up
on it after the retry policy) and exits. Its log lines go to stderr, inherited, in the
serving process's format.
"""

from __future__ import annotations

import asyncio
import logging
import logging.config
import signal
import sys

import msgspec

from gateway.db.engine import create_engine
from gateway.logs import drain, logging_config
from gateway.telemetry.batches import BatchWriter, Entry, Outcome, RetryPolicy
from gateway.telemetry.wire import (
    MAX_FRAME,
    Ack,
    Batch,
    Failed,
    Ready,
    Setup,
    frame,
    read_body,
    to_child,
)

log = logging.getLogger("gateway.telemetry.writer")


class _Output:
    """Frames to the serving process; once it is gone, nothing more is sent."""

    def __init__(self) -> None:
        self._out = sys.stdout.buffer
        self.gone = False

    def send(self, message: Ack | Failed | Ready) -> None:
        if self.gone:
            return
        try:
            self._out.write(frame(message))
            self._out.flush()
        except OSError:  # the serving process has ended: keep writing rows anyway
            self.gone = True


class _Unread(msgspec.Struct, tag="batch", array_like=True):
    """A batch frame whose records do not decode (a bug in the serving process): its key
    and how many rows it had, to acknowledge it as dropped."""

    key: str
    records: list[msgspec.Raw]


_unread = msgspec.msgpack.Decoder(_Unread)


def _batch(body: bytes) -> Batch | _Unread | None:
    try:
        message = to_child.decode(body)
    except msgspec.ValidationError as exc:
        unread = _unread.decode(body)  # else the frames make no sense: this process ends
        log.error(
            "telemetry: a batch of %d rows could not be read (%s); dropped",
            len(unread.records),
            str(exc)[:200],
        )
        return unread
    return message if isinstance(message, Batch) else None


async def _frames(
    reader: asyncio.StreamReader, into: asyncio.Queue[Batch | _Unread | None]
) -> None:
    try:
        while True:
            message = _batch(await read_body(reader))
            if message is not None:
                into.put_nowait(message)
    except asyncio.IncompleteReadError:
        pass  # the end of stdin: the serving process is done, or gone
    finally:
        into.put_nowait(None)


async def _setup(reader: asyncio.StreamReader) -> Setup:
    message = to_child.decode(await read_body(reader))
    if not isinstance(message, Setup):
        raise ValueError("the first frame is not the setup")
    return message


async def run() -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_FRAME)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    try:
        setup = await _setup(reader)
    except asyncio.IncompleteReadError:
        return  # stopped before it was set up: nothing was sent
    logging.config.dictConfig(logging_config(setup.log_format, setup.log_level))  # type: ignore[arg-type]
    output = _Output()
    engine = create_engine(setup.url)
    writer = BatchWriter(
        engine,
        RetryPolicy(setup.retry_attempts, setup.retry_delay, setup.retry_max_delay),
        on_failure=lambda: output.send(Failed()),
    )
    batches: asyncio.Queue[Batch | _Unread | None] = asyncio.Queue()
    reading = asyncio.create_task(_frames(reader, batches))
    output.send(Ready())
    outage = False  # the last batch written was dropped after the whole retry policy
    try:
        while (batch := await batches.get()) is not None:
            count = len(batch.records)
            if isinstance(batch, _Unread):
                outcome = Outcome(dropped=count)
            elif outage and reading.done():
                # Stdin has ended (the serving process stops, or is gone): one retry policy
                # for all that is left, not one per batch (hours of them).
                outcome = Outcome(dropped=count)
                log.error("telemetry: dropped %d rows, the database is still failing", count)
            else:
                try:
                    entries = [
                        Entry(record, detail, own_detail=True)
                        for record, detail in zip(batch.records, batch.details, strict=True)
                    ]
                    outcome = await writer.write(batch.key, entries)
                    outage = outcome.dropped > outcome.rejected
                except Exception:  # a bug: the batch is given up on, not sent again forever
                    log.exception("telemetry: a batch of %d rows could not be written", count)
                    outcome = Outcome(dropped=count)
            output.send(Ack(batch.key, outcome.written, outcome.dropped, outcome.rejected))
    finally:
        reading.cancel()
        await engine.dispose()


def main() -> None:
    # The serving process decides when this one ends (by closing stdin), not a signal
    # sent to the whole process group.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        asyncio.run(run())
    finally:
        drain()


if __name__ == "__main__":
    main()
