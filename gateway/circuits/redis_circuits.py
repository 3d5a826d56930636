"""Circuit states shared through Redis (``redis.url``): a circuit one process opens
refuses the provider in every process within a poll (docs/operations.md, "Replicas").

Each process keeps its own :class:`CircuitBreakers` (a call reads only those, no I/O on
its path) and exchanges the changes through one Redis hash, ``gateway:circuits``:
provider id -> the wall-clock time (epoch seconds) its circuit opened.

- A local opening (the failure threshold reached here, or a probe that failed here)
  writes its time; a local close (a probe that succeeded here) deletes the field. The
  sync task writes them at once.
- Every ``poll_seconds`` (0.25 s) the sync task reads the hash. An opening not seen
  before is adopted: the provider is refused for a cooldown counted from when it opened
  elsewhere. A circuit open here whose field is gone was closed elsewhere (its probe
  succeeded): it closes here too.
- Failures are counted by each process (the threshold is of one process's consecutive
  failures); after a cooldown each process lets one probe through, and the first verdict
  written is everyone's.
- A field that is not ours to read (a name that is not UTF-8, a time that is not a
  finite number or lies in the future beyond the clock skew allowed) is skipped and
  counted (gateway.db.redis_values); the others are adopted as usual.
- Redis down: the circuits are per process meanwhile (each keeps working on its own
  failures) and the changes wait. One warning when Redis stops answering (two syncs in a
  row failed: one slow answer on a busy machine is no outage), one line when it answers
  again; then what waited is written and the hash read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from redis.asyncio import Redis

from gateway.db.engine import describe_error
from gateway.db.redis_values import SkippedValues, opening_within
from gateway.routing.circuit import CircuitBreakers, CircuitState
from gateway.tasks import Supervisor, cancel_and_wait, wait_event

log = logging.getLogger(__name__)

KEY = "gateway:circuits"
POLL_SECONDS = 0.25
DOWN_POLL_SECONDS = 1.0  # while Redis does not answer
FAILURES_FOR_DOWN = 2  # consecutive failed syncs before Redis counts as down
_MIN_EXPIRY_SECONDS = 3600  # the hash outlives every cooldown; a deployment gone idle sheds it


class RedisCircuits:
    def __init__(
        self,
        redis: Redis,
        failure_threshold: int,
        cooldown_seconds: float,
        *,
        key: str = KEY,
        poll_seconds: float = POLL_SECONDS,
        wall: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        tasks: Supervisor | None = None,
        skipped: SkippedValues | None = None,
    ) -> None:
        self._tasks = tasks or Supervisor()
        self._skipped = skipped or SkippedValues()
        self._local = CircuitBreakers(failure_threshold, cooldown_seconds)
        self._redis = redis
        self._key = key
        self._poll = poll_seconds
        self._wall = wall
        self._monotonic = monotonic
        self._expiry = max(_MIN_EXPIRY_SECONDS, int(cooldown_seconds * 10))
        # Changes not yet written: provider -> when it opened (wall), or None: closed.
        self._pending: dict[str, float | None] = {}
        # Per provider, the opening (wall) last written or adopted: a field still holding
        # it is no news.
        self._seen: dict[str, float] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.shared = True  # False while Redis does not answer
        self._failures = 0  # consecutive failed syncs

    # The request path: the local copy only.

    @property
    def cooldown_seconds(self) -> float:
        return self._local.cooldown_seconds

    def open_providers(self, now: float) -> frozenset[str]:
        return self._local.open_providers(now)

    def state(self, provider_id: str, now: float) -> CircuitState:
        return self._local.state(provider_id, now)

    def reopens_at(self, provider_id: str) -> float | None:
        return self._local.reopens_at(provider_id)

    def failures(self, provider_id: str) -> int:
        return self._local.failures(provider_id)

    def try_acquire(self, provider_id: str, now: float) -> bool:
        return self._local.try_acquire(provider_id, now)

    def release(self, provider_id: str) -> None:
        self._local.release(provider_id)

    def record_success(self, provider_id: str) -> bool:
        closed = self._local.record_success(provider_id)
        if closed:
            self._seen.pop(provider_id, None)
            self._changed(provider_id, None)
        return closed

    def record_failure(self, provider_id: str, now: float) -> bool:
        opened = self._local.record_failure(provider_id, now)
        if opened:
            wall = self._wall() - (self._monotonic() - now)
            self._seen[provider_id] = wall
            self._changed(provider_id, wall)
        return opened

    # The background exchange.

    async def start(self) -> None:
        if self._task is None:
            await self.sync()  # adopt what is open already before the first call
            self._task = self._tasks.spawn("circuit-states", self._loop)

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)

    async def sync(self) -> None:
        """Write the waiting changes, then adopt what the hash says; never raises."""
        try:
            await self._write_pending()
            fields = await self._redis.hgetall(self._key)
        except Exception as error:  # Redis down: per-process circuits until it answers
            self._failures += 1
            if self.shared and self._failures >= FAILURES_FOR_DOWN:
                self.shared = False
                log.warning(
                    "circuit states: Redis does not answer (%s); each process keeps its own "
                    "circuits until it does",
                    describe_error(error),
                )
            return
        self._failures = 0
        if not self.shared:
            self.shared = True
            log.warning("circuit states: Redis answers again; circuits are shared again")
        self._adopt(self._decoded(fields))

    def _changed(self, provider_id: str, opened: float | None) -> None:
        self._pending[provider_id] = opened
        self._wake.set()

    async def _write_pending(self) -> None:
        if not self._pending:
            return
        writing = dict(self._pending)
        pipe = self._redis.pipeline(transaction=True)
        for provider_id, opened in writing.items():
            if opened is None:
                pipe.hdel(self._key, provider_id)
            else:
                pipe.hset(self._key, provider_id, repr(opened))
        pipe.expire(self._key, self._expiry)
        await pipe.execute()
        for provider_id, opened in writing.items():
            if self._pending.get(provider_id, _GONE) == opened:  # unless it changed meanwhile
                del self._pending[provider_id]

    def _adopt(self, remote: dict[str, float]) -> None:
        wall, now = self._wall(), self._monotonic()
        for provider_id, opened in remote.items():
            if provider_id in self._pending or self._seen.get(provider_id) == opened:
                continue
            self._seen[provider_id] = opened
            opened_here = now - (wall - opened)  # the same instant on this process's clock
            current = self._local.opened_at(provider_id)
            if current is not None and current >= opened_here:
                continue  # open here since later already
            self._local.adopt_open(provider_id, opened_here)
            left = self._local.cooldown_seconds - (now - opened_here)
            if left > 0:
                log.warning(
                    "circuit opened for provider %s by another gateway process: its calls "
                    "are refused for %.0f s",
                    provider_id,
                    left,
                )
        for provider_id in self._local.opened():
            if provider_id not in remote and provider_id not in self._pending:
                self._seen.pop(provider_id, None)
                if self._local.close(provider_id):
                    log.info(
                        "circuit closed for provider %s by another gateway process", provider_id
                    )

    def _decoded(self, fields: dict[bytes | str, bytes | str]) -> dict[str, float]:
        """The hash's usable fields: provider id -> opened (epoch seconds)."""
        remote: dict[str, float] = {}
        wall = self._wall()
        for name, value in fields.items():
            try:
                provider_id = name.decode() if isinstance(name, bytes) else name
            except UnicodeDecodeError:
                self._skipped.skip("circuits", "a field name that is not UTF-8")
                continue
            opened = opening_within(value, wall)
            if opened is None:
                self._skipped.skip(
                    "circuits", f"provider {provider_id[:64]!r}: not a time in bounds"
                )
                continue
            remote[provider_id] = opened
        return remote

    async def _loop(self) -> None:
        while True:
            wait = self._poll if self.shared else DOWN_POLL_SECONDS
            await wait_event(self._wake, wait)
            self._wake.clear()
            await self.sync()


_GONE = object()
