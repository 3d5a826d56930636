"""Failed console sign-ins, counted per client address (docs/console.md, "Sign-in").

An address that sent ``LIMIT`` wrong admin keys within ``WINDOW_SECONDS`` is refused
(429, ``Retry-After``) until the oldest of them is ``WINDOW_SECONDS`` old, whatever key
it sends then. A right key clears its count. Each process counts its own sign-ins, so a
deployment of N processes lets an address try at most N × ``LIMIT`` keys a window.

The counts are bounded: at most ``MAX_ADDRESSES`` addresses are kept, the one that
failed least recently dropped first. Pure: the clock (monotonic seconds) is passed in.
"""

from __future__ import annotations

import math
from collections import deque

LIMIT = 5
WINDOW_SECONDS = 60.0
MAX_ADDRESSES = 10_000


class SignInThrottle:
    def __init__(
        self,
        limit: int = LIMIT,
        window_seconds: float = WINDOW_SECONDS,
        max_addresses: int = MAX_ADDRESSES,
    ) -> None:
        self.limit = limit
        self.window_seconds = window_seconds
        self._max_addresses = max_addresses
        # Failure times per address; insertion order is least recently failed first.
        self._failures: dict[str, deque[float]] = {}

    def retry_after(self, address: str, now: float) -> int | None:
        """Whole seconds until ``address`` may try again, or None when it may now."""
        failures = self._recent(address, now)
        if failures is None or len(failures) < self.limit:
            return None
        return max(1, math.ceil(failures[0] + self.window_seconds - now))

    def failed(self, address: str, now: float) -> bool:
        """Count a wrong key from ``address``; True when this one reached the limit."""
        failures = self._recent(address, now)
        if failures is None:
            self._make_room(now)
            failures = deque(maxlen=self.limit)
        else:
            del self._failures[address]  # re-inserted below: now the most recent
        failures.append(now)
        self._failures[address] = failures
        return len(failures) == self.limit

    def succeeded(self, address: str) -> None:
        self._failures.pop(address, None)

    def __len__(self) -> int:
        return len(self._failures)

    def _recent(self, address: str, now: float) -> deque[float] | None:
        failures = self._failures.get(address)
        if failures is None:
            return None
        while failures and failures[0] <= now - self.window_seconds:
            failures.popleft()
        if not failures:
            del self._failures[address]
            return None
        return failures

    def _make_room(self, now: float) -> None:
        """Drop addresses whose last failure left the window, then the least recent."""
        for address in list(self._failures):
            if self._failures[address][-1] > now - self.window_seconds:
                break
            del self._failures[address]
        while len(self._failures) >= self._max_addresses:
            del self._failures[next(iter(self._failures))]
