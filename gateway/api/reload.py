"""Reload the configuration file on SIGHUP and when it changes on disk (docs/operations.md,
"Reloading the configuration").

The file is polled: its size, mtime and inode each ``poll_seconds``. A change, or a
SIGHUP, is taken only once the file's bytes read the same twice ``debounce_seconds``
apart (an editor writing in several steps, or a file still being copied, is read once it
holds still), and only if they differ from what is served. The bytes installed are the
ones compared, never a third read. A valid file replaces the running configuration
between calls (``Runtime.reload``); an invalid one, or one that would serve nothing
(gateway.config.changes.refusals), changes nothing and every problem is logged with its
YAML path. Each process (each worker) watches and reloads for itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping
from pathlib import Path

from gateway.config.changes import as_reloaded, refusals, restart_only_changes
from gateway.config.errors import ConfigError
from gateway.config.loader import LoadedFile, file_digest, load_config_bytes
from gateway.domain.settings import GatewayConfig
from gateway.runtime import Runtime
from gateway.tasks import cancel_and_wait

log = logging.getLogger("gateway.reload")

POLL_SECONDS = 1.0
DEBOUNCE_SECONDS = 0.5

_Stat = tuple[int, int, int] | None  # (mtime_ns, size, inode); None: the file is missing


def _stat(path: Path) -> _Stat:
    try:
        found = path.stat()
    except OSError:
        return None
    return (found.st_mtime_ns, found.st_size, found.st_ino)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None


class ConfigWatcher:
    def __init__(
        self,
        runtime: Runtime,
        path: Path,
        *,
        poll_seconds: float = POLL_SECONDS,
        debounce_seconds: float = DEBOUNCE_SECONDS,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._runtime = runtime
        self._path = path
        self._poll_seconds = poll_seconds
        self._debounce_seconds = debounce_seconds
        self._environ = environ
        self._lock = asyncio.Lock()
        self._seen: _Stat = None
        self._refused: str | None = None  # the digest of the last file refused
        self._task: asyncio.Task[None] | None = None
        self._signalled: set[asyncio.Task[None]] = set()
        self._on_sighup = False

    async def start(self) -> None:
        self._seen = _stat(self._path)
        self._task = self._runtime.tasks.spawn("config-watch", self._poll)
        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGHUP, self._hangup)
            self._on_sighup = True
        except (NotImplementedError, RuntimeError, ValueError, AttributeError):
            # Not the main thread (an embedded server) or no SIGHUP: watching the file only.
            log.debug("config reload: SIGHUP not available here; watching %s", self._path)

    async def stop(self) -> None:
        if self._on_sighup:
            with contextlib.suppress(Exception):
                asyncio.get_running_loop().remove_signal_handler(signal.SIGHUP)
            self._on_sighup = False
        task, self._task = self._task, None
        await cancel_and_wait(task, *self._signalled)

    def _hangup(self) -> None:
        task = asyncio.create_task(self._reload_settled("SIGHUP"), name="config-reload")
        self._signalled.add(task)
        task.add_done_callback(self._signalled.discard)

    async def _settled(self) -> bytes | None:
        """The file's bytes once two reads ``debounce_seconds`` apart agree (None: it
        cannot be read, twice)."""
        before = await asyncio.to_thread(_read, self._path)
        while True:
            await asyncio.sleep(self._debounce_seconds)
            after = await asyncio.to_thread(_read, self._path)
            if after == before:
                return after
            before = after

    async def _reload_settled(self, reason: str) -> None:
        await self.reload(reason, await self._settled())

    async def _poll(self) -> None:
        while True:
            await asyncio.sleep(self._poll_seconds)
            current = _stat(self._path)
            if current == self._seen:
                continue
            raw = await self._settled()
            self._seen = _stat(self._path)
            if raw is None:
                log.warning(
                    "config reload: %s is gone; the running configuration stays", self._path
                )
                continue
            digest = file_digest(raw)
            if digest in (self._runtime.version.digest, self._refused):
                continue  # touched, written back as it was, or refused already (logged)
            await self.reload("the file changed", raw)

    async def reload(self, reason: str, raw: bytes | None = None) -> bool:
        """Serve ``raw`` (default: the file as it is now) if it is valid and safe; True
        when a new configuration is served."""
        async with self._lock:
            try:
                if raw is None:
                    raw = await asyncio.to_thread(_read, self._path)
                return await self._reload(reason, raw)
            except Exception:  # a reload must never take the server down
                log.exception("config reload (%s) failed; the running configuration stays", reason)
                return False

    async def _reload(self, reason: str, raw: bytes | None) -> bool:
        path = self._path
        current = self._runtime.serving
        self._refused = None if raw is None else file_digest(raw)  # until it is served
        try:
            if raw is None:
                raise ConfigError(["cannot read the file"])
            loaded: LoadedFile = await asyncio.to_thread(
                load_config_bytes, raw, self._environ, str(path)
            )
        except ConfigError as error:
            log.error(
                "config reload (%s): %s has %d problem(s); the running configuration (%s) stays",
                reason,
                path,
                len(error.problems),
                current.version.digest,
            )
            for problem in error.problems:
                log.error("%s: %s", path, problem)
            return False
        if loaded.digest == current.version.digest:
            log.info("config reload (%s): %s is unchanged (%s)", reason, path, loaded.digest)
            return False
        refused = refusals(current.config, loaded.config)
        if refused:
            log.error(
                "config reload (%s): %s refused; the running configuration (%s) stays",
                reason,
                path,
                current.version.digest,
            )
            for problem in refused:
                log.error("%s: %s", path, problem)
            return False
        return await self._install(reason, current.config, loaded)

    async def _install(self, reason: str, current: GatewayConfig, loaded: LoadedFile) -> bool:
        for section in restart_only_changes(current, loaded.config):
            log.warning(
                "config reload: %s: %s changed; it takes effect at the next restart",
                self._path,
                section,
            )
        config = as_reloaded(current, loaded.config)
        served = await self._runtime.reload(config, loaded.digest)
        self._refused = None
        log.info(
            "config reload (%s): serving %s (%s, generation %d, pid %d)",
            reason,
            self._path,
            served.version.digest,
            served.version.generation,
            os.getpid(),
        )
        return True
