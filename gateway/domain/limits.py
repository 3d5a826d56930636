"""A rate limit as the configuration and the key directory state it: per minute and at once.

Keys, teams, configurations and models (a provider account's own quota for that model) each
may carry one; ``None`` in a field is no limit of that kind.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class RateLimit:
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    concurrent: int | None = None

    @property
    def is_empty(self) -> bool:
        return (
            self.requests_per_minute is None
            and self.tokens_per_minute is None
            and self.concurrent is None
        )
