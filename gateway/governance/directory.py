"""Every gateway key and team a process serves, in memory: the YAML's (``source: file``,
read-only) and the database's (made through ``/admin/keys`` and ``/admin/teams`` or
``gateway keys``), looked up by digest on each call without a database read.

In force everywhere within a second (docs/operations.md, "Keys and teams at runtime"):
each admin write adds 1 to ``governance_changes.version`` in its own transaction, the
writing process reloads at once, and every other process reloads when it sees a new
version: with ``redis.url`` a write is published on ``gateway:governance`` (and the
counter is still read every 5 s, and every 0.5 s while the subscription is down);
without Redis each process reads the counter every 0.5 s. An expiry is checked
against the clock at each call, so an expired key is refused at its ``expiresAt`` to
the second on every process whatever the reload.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING

from gateway.domain.clock import utc_now
from gateway.domain.keys import hash_key
from gateway.domain.settings import ApiKey, GatewayConfig, Team
from gateway.governance.documents import StoredKey, effective, file_key, previous
from gateway.governance.store import GovernanceStore
from gateway.tasks import Supervisor, cancel_and_wait

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger(__name__)

CHANNEL = "gateway:governance"
POLL_SECONDS = 0.5  # without Redis, or while its subscription is down
BACKSTOP_SECONDS = 5.0  # with Redis subscribed: a message lost on the way
TOUCH_SECONDS = 30.0  # how often last_used_at is written
# The subscription is read a second at a time and the loop ends on ``stop``'s flag:
# redis-py (8.2) can swallow a task cancellation that lands while ``subscribe`` is under
# way, after which a blocking read would wait for the next message, for ever.
LISTEN_READ_SECONDS = 1.0


class Directory:
    def __init__(
        self,
        store: GovernanceStore,
        config: GatewayConfig,
        *,
        redis: Redis | None = None,
        tasks: Supervisor | None = None,
        clock: Callable[[], datetime] = utc_now,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self.store = store
        self._redis = redis
        self._tasks = tasks or Supervisor()
        self._clock = clock
        self._poll = poll_seconds
        self._file_keys: tuple[ApiKey, ...] = ()
        self._file_teams: dict[str, Team] = {}
        self._db_keys: dict[str, StoredKey] = {}
        self._db_teams: dict[str, Team] = {}
        self._by_digest: dict[str, ApiKey] = {}
        self.version: int | None = None  # the counter loaded; None: never read
        self._lock = asyncio.Lock()
        self._subscribed = False
        self._used: dict[str, datetime] = {}
        self._loops: list[asyncio.Task[None]] = []
        self._failing = False
        self._stopping = False
        self.use_config(config)

    # --- the call path -------------------------------------------------------------

    def identify(self, authorization: str | None) -> ApiKey | None:
        """The key a ``Bearer`` header presents, or None (unknown, revoked or expired)."""
        presented = bearer(authorization)
        if presented is None:
            return None
        digest = hash_key(presented)
        key = self._by_digest.get(digest)
        if key is None or not hmac.compare_digest(key.key_hash, digest):
            return None
        if key.expires_at is not None or key.source != "file":
            now = self._clock()
            if key.expires_at is not None and now >= key.expires_at:
                return None
            if key.source != "file":
                self._used[key.id] = now
        return key

    # --- what is served ------------------------------------------------------------

    def use_config(self, config: GatewayConfig) -> None:
        """The YAML's keys and teams (at start and on each reload)."""
        self._file_teams = {team.id: team for team in config.teams}
        self._file_keys = config.auth.keys
        self._rebuild()

    def team(self, team_id: str) -> Team | None:
        return self._file_teams.get(team_id) or self._db_teams.get(team_id)

    def teams(self) -> list[Team]:
        return [*self._file_teams.values(), *sorted(self._db_teams.values(), key=_id)]

    def all_keys(self) -> list[StoredKey]:
        """Every key: the YAML's, then the database's (revoked ones included)."""
        return [
            *(file_key(key) for key in self._file_keys),
            *sorted(self._db_keys.values(), key=_id),
        ]

    def key(self, key_id: str) -> StoredKey | None:
        for key in self._file_keys:
            if key.id == key_id:
                return file_key(key)
        return self._db_keys.get(key_id)

    def is_file_key(self, key_id: str) -> bool:
        return any(key.id == key_id for key in self._file_keys)

    def served_keys(self) -> list[ApiKey]:
        """Every key that may call now, as calls see it (for the Budgets page)."""
        seen: dict[str, ApiKey] = {}
        for key in self._by_digest.values():
            seen.setdefault(key.id, key)
        return sorted(seen.values(), key=lambda key: key.id)

    def _rebuild(self) -> None:
        by_digest: dict[str, ApiKey] = {}
        for key in self._file_keys:
            team = self._file_teams.get(key.team) if key.team is not None else None
            by_digest[key.key_hash] = effective(file_key(key), team) if team else key
        for stored in self._db_keys.values():
            if stored.revoked_at is not None:
                continue
            team = self.team(stored.team) if stored.team is not None else None
            served = effective(stored, team)
            if stored.previous_digest and stored.previous_expires_at is not None:
                until = stored.previous_expires_at
                if stored.expires_at is not None:
                    until = min(until, stored.expires_at)
                by_digest.setdefault(
                    stored.previous_digest, previous(served, stored.previous_digest, until)
                )
            by_digest.setdefault(stored.digest, served)
        self._by_digest = by_digest  # one assignment: a call sees the old map or the new one

    # --- reloading -----------------------------------------------------------------

    async def refresh(self) -> None:
        """Read every database key and team again (after a write, or a new version)."""
        async with self._lock:
            version, keys, teams = await self.store.load()
            if self.version is not None and version < self.version:
                return  # an older read finishing late
            self._db_keys = {key.id: key for key in keys}
            self._db_teams = {team.id: team for team in teams}
            self.version = version
            self._rebuild()

    async def changed(self) -> None:
        """After this process's own write: in force here now, and told to the others."""
        await self.refresh()
        if self._redis is not None:
            try:
                await self._redis.publish(CHANNEL, str(self.version))
            except Exception as error:  # the others read the counter
                log.warning("governance change not published (%s)", type(error).__name__)

    async def _check(self) -> None:
        try:
            version = await self.store.version()
            if version != self.version:
                await self.refresh()
        except Exception as error:
            if not self._failing:
                log.warning("keys and teams not re-read from the database: %s", error)
            self._failing = True
            return
        if self._failing:
            log.info("keys and teams read from the database again")
        self._failing = False

    async def _watch(self) -> None:
        waited = 0.0
        since_touch = 0.0
        while True:
            await asyncio.sleep(self._poll)
            waited += self._poll
            since_touch += self._poll
            if self._redis is None or not self._subscribed or waited >= BACKSTOP_SECONDS:
                waited = 0.0
                await self._check()
            if since_touch >= TOUCH_SECONDS:
                since_touch = 0.0
                await self.flush_used()

    async def _listen(self) -> None:
        assert self._redis is not None
        pubsub = self._redis.pubsub()
        try:
            await pubsub.subscribe(CHANNEL)
            self._subscribed = True
            await self._check()  # what changed before the subscription began
            while not self._stopping:
                message = await pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=LISTEN_READ_SECONDS
                )
                if message is not None and message.get("type") == "message":
                    await self._check()
        finally:
            self._subscribed = False
            with contextlib.suppress(Exception):
                await pubsub.aclose()

    async def flush_used(self) -> None:
        used, self._used = self._used, {}
        try:
            await self.store.touch(used)
        except Exception as error:
            log.warning("last_used_at not written: %s", error)

    async def start(self) -> None:
        self._stopping = False
        await self._check()
        self._loops.append(self._tasks.spawn("governance-watch", self._watch))
        if self._redis is not None:
            self._loops.append(self._tasks.spawn("governance-listen", self._listen))

    async def stop(self) -> None:
        self._stopping = True
        await cancel_and_wait(*self._loops)
        self._loops.clear()
        await self.flush_used()


def bearer(authorization: str | None) -> str | None:
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()


def _id(item: StoredKey | Team) -> str:
    return item.id
