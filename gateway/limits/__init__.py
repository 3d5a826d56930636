"""Rate limits (``rateLimit`` on keys, teams, configurations and models): the limiter the
pipeline asks at admission and tells at the call's end.

``gateway.limits.decisions`` is the algorithm (pure); ``local`` runs it in one process,
``redis_limiter`` in one Lua script per check, shared by every process on ``redis.url``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from gateway.limits.decisions import Scope, Verdict


@dataclass(frozen=True, slots=True)
class Ticket:
    """What one admission holds, released or settled once when the call ends."""

    call_id: str
    scopes: tuple[Scope, ...]
    local: bool  # made by the in-process limiter (alone, or during a Redis outage)

    @property
    def settles(self) -> bool:
        """Whether the end of the call has anything to tell (held tokens or a slot)."""
        return any(
            s.limit.tokens_per_minute is not None or s.limit.concurrent is not None
            for s in self.scopes
        )


class RateLimiter(Protocol):
    async def admit(self, scopes: Sequence[Scope], need: int) -> tuple[Verdict, Ticket | None]:
        """Check ``scopes`` for one request holding ``need`` tokens; count it in every one
        when all admit it (a ticket), in none when one refuses (no ticket). Raises
        RateLimitUnavailable when the shared store is away and outages refuse."""
        ...

    async def settle(self, ticket: Ticket, tokens: int | None) -> None:
        """The call ended: its held tokens become ``tokens`` (None: kept), its slot frees."""
        ...

    def release(self, ticket: Ticket, tokens: int | None) -> None:
        """``settle`` for a ticket this process counted itself (``ticket.local``): at once,
        without yielding to the event loop."""
        ...
