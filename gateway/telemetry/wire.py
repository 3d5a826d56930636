"""What the serving process and its telemetry writer process say to each other.

Frames on the child's stdin and stdout: a 4-byte big-endian length, then a msgspec
MessagePack message. In: one :class:`Setup` first (the database URL travels here, never
in argv or the environment: it may hold a password), then :class:`Batch` frames. Out:
:class:`Ready` once it is set up, :class:`Ack` for every batch once it is written or given
up on, and :class:`Failed` for each failed attempt (the ``failed_batches`` counter of the
serving process).

A record travels whole except its trail: the serving process turns the trail into the
row's ``routing_detail`` JSON (its decision holds the configuration's objects, which the
writer process has not got), ``details`` in the order of ``records``.
"""

from __future__ import annotations

import asyncio
import struct

import msgspec

from gateway.telemetry.records import TelemetryRecord

HEADER = struct.Struct(">I")
MAX_FRAME = 1 << 30


class Setup(msgspec.Struct, tag="setup", array_like=True, kw_only=True):
    url: str
    retry_attempts: int
    retry_delay: float
    retry_max_delay: float
    log_format: str = "text"
    log_level: str = "INFO"


class Batch(msgspec.Struct, tag="batch", array_like=True, gc=False):
    key: str
    records: list[TelemetryRecord]
    details: list[str | None]


class Ack(msgspec.Struct, tag="ack", array_like=True):
    key: str
    written: int
    dropped: int
    rejected: int


class Failed(msgspec.Struct, tag="failed", array_like=True):
    count: int = 1


class Ready(msgspec.Struct, tag="ready", array_like=True):
    """Set up (logging, the engine): what ends this process from now on ends it while it
    holds batches, not while it starts."""


ToChild = Setup | Batch
FromChild = Ack | Failed | Ready

_encoder = msgspec.msgpack.Encoder()


def frame(message: Setup | Batch | Ack | Failed | Ready) -> bytes:
    body = _encoder.encode(message)
    return HEADER.pack(len(body)) + body


async def read_body(reader: asyncio.StreamReader) -> bytes:
    """The body of the next frame on ``reader``: ``asyncio.IncompleteReadError`` at the end
    of the stream, ``ValueError`` for a length past ``MAX_FRAME`` (the frames make no sense)."""
    (size,) = HEADER.unpack(await reader.readexactly(HEADER.size))
    if size > MAX_FRAME:
        raise ValueError(f"a frame of {size} bytes")
    return await reader.readexactly(size)


def batch_frame(key: str, records: list[TelemetryRecord], details: list[str | None]) -> bytes:
    """The frame of a batch; ``records`` must carry no trail (``details`` holds it)."""
    return frame(Batch(key, records, details))


to_child = msgspec.msgpack.Decoder(ToChild)
from_child = msgspec.msgpack.Decoder(FromChild)
