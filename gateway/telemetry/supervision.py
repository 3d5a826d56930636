"""Pure decisions of the writer process's supervision (:mod:`gateway.telemetry.process_writer`):
whether another process can open the database, how long the retry policy waits, and
which batch keeps ending writer processes."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.engine import make_url

from gateway.telemetry.writer import WriterSettings

POISON_ENDINGS = 3  # writer processes in a row ended while one batch was the oldest held


def separate_process_can_open(url: str) -> bool:
    """False for an in-memory SQLite database: another process cannot open it."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        return True
    memory = parsed.query.get("mode") == "memory" or parsed.database in (None, "", ":memory:")
    return not memory


def retry_window(settings: WriterSettings) -> float:
    """Seconds of backoff the retry policy spends on one batch before it gives it up
    (the waits between its attempts; the default 45 attempts: about 320 s)."""
    total, delay = 0.0, settings.retry_delay
    for _ in range(max(0, settings.retry_attempts - 1)):
        total += delay
        delay = min(delay * 2, settings.retry_max_delay)
    return total


@dataclass
class Suspect:
    """The batch that was the oldest one held when writer processes ended, and how many
    in a row ended with it so. Only an ending on its own after the process was set up
    counts: one that cannot start (a driver missing, a bad install) says nothing of a
    batch, nor does one killed as hung (a database that swallows connections)."""

    key: str = ""
    endings: int = 0

    def ended(self, oldest: str, on_its_own: bool) -> bool:
        """A writer process ended holding ``oldest`` first: True when that batch is the
        one to drop (``POISON_ENDINGS`` endings in a row with it)."""
        if not on_its_own:
            self.key, self.endings = "", 0
            return False
        self.endings = self.endings + 1 if oldest == self.key else 1
        self.key = oldest
        if self.endings < POISON_ENDINGS:
            return False
        self.key, self.endings = "", 0
        return True
