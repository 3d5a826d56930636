"""Values read from Redis are checked before use (docs/operations.md, "Values read from
Redis"): another process, an older version, or a hand typing ``HSET`` may have written
them. A value that does not decode, or is out of bounds, is skipped on its own: counted
(``gateway_redis_values_skipped_total{source}``), logged at most once a minute per
source, and the feature goes on with the other values.
"""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timedelta

log = logging.getLogger(__name__)

SKEW_SECONDS = 5.0  # how far ahead another machine's clock may run
LOG_EVERY_SECONDS = 60.0


def opening_within(value: bytes | str, wall_now: float) -> float | None:
    """A circuit's opening (epoch seconds) if it is a finite number no later than
    ``wall_now`` plus the skew (so it refuses for at most cooldown + skew); else None."""
    try:
        opened = float(value)
    except (TypeError, ValueError, UnicodeDecodeError):
        return None
    if not math.isfinite(opened) or opened > wall_now + SKEW_SECONDS:
        return None
    return opened


def taken_within(taken_at: datetime, now: datetime) -> bool:
    """Is a reading's time usable: aware, and not later than ``now`` plus the skew?"""
    if taken_at.tzinfo is None:
        return False
    return taken_at <= now + timedelta(seconds=SKEW_SECONDS)


class SkippedValues:
    """The values skipped, per source; one log line a minute per source at most."""

    def __init__(
        self,
        on_skip: Callable[[str], None] | None = None,
        *,
        log_every_seconds: float = LOG_EVERY_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._on_skip = on_skip
        self._every = log_every_seconds
        self._monotonic = monotonic
        self._logged: dict[str, float] = {}
        self.counts: Counter[str] = Counter()

    def skip(self, source: str, why: str) -> None:
        """One value of ``source`` was unusable; ``why`` names it (never its content)."""
        self.counts[source] += 1
        if self._on_skip is not None:
            self._on_skip(source)
        now = self._monotonic()
        last = self._logged.get(source)
        if last is None or now - last >= self._every:
            self._logged[source] = now
            log.warning(
                "redis: skipped a value of %s that cannot be used (%s); %d skipped so far",
                source,
                why,
                self.counts[source],
            )
