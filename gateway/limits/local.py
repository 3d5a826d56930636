"""The limiter of one process: the sliding logs in memory (no I/O, no lock: one event
loop). Alone when there is no ``redis.url``; with Redis, what limits during an outage
under ``rateLimits.onRedisOutage: local``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence

from gateway.limits import Ticket
from gateway.limits.decisions import (
    Reading,
    Scope,
    ScopeLog,
    Verdict,
    admitted_reading,
    read,
    record,
    refusing_measure,
    settle,
)

PRUNE_AT = 10_000  # scopes kept before the idle ones are dropped


def monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


def new_call_id() -> str:
    return os.urandom(8).hex()


class InProcessLimiter:
    def __init__(self, lease_ms: int, clock: Callable[[], int] = monotonic_ms) -> None:
        self._lease = lease_ms
        self._clock = clock
        self._logs: dict[str, ScopeLog] = {}

    async def admit(self, scopes: Sequence[Scope], need: int) -> tuple[Verdict, Ticket | None]:
        return self.check(scopes, need)

    def check(self, scopes: Sequence[Scope], need: int) -> tuple[Verdict, Ticket | None]:
        now = self._clock()
        logs = self._logs
        if len(logs) > PRUNE_AT:
            self._prune(now)
        readings: list[Reading] = []
        refused: int | None = None
        measure: str | None = None
        found: list[ScopeLog] = []
        for index, scope in enumerate(scopes):
            log = logs.get(scope.storage)
            if log is None:
                log = logs[scope.storage] = ScopeLog()
            log.expire(now)
            found.append(log)
            reading = read(log, scope.limit, need, now)
            readings.append(reading)
            if refused is None:
                measure = refusing_measure(scope.limit, reading, need)
                if measure is not None:
                    refused = index
        if refused is not None:
            return Verdict(False, tuple(readings), refused, measure), None
        call_id = new_call_id()
        for index, scope in enumerate(scopes):
            record(found[index], scope.limit, call_id, need, now, self._lease)
            readings[index] = admitted_reading(scope.limit, readings[index], need)
        return Verdict(True, tuple(readings)), Ticket(call_id, tuple(scopes), local=True)

    async def settle(self, ticket: Ticket, tokens: int | None) -> None:
        self.release(ticket, tokens)

    def release(self, ticket: Ticket, tokens: int | None) -> None:
        for scope in ticket.scopes:
            log = self._logs.get(scope.storage)
            if log is not None:
                settle(log, ticket.call_id, tokens)

    def _prune(self, now: int) -> None:
        for name in list(self._logs):
            log = self._logs[name]
            log.expire(now)
            if log.idle:
                del self._logs[name]
