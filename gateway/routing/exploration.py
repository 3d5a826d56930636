"""Exploration (docs/routing.md, "Exploration"): a bounded share of a criteria
configuration's calls goes to eligible candidates that lack history.

The decision stays decide()'s; this only picks, for some calls, another of its eligible
candidates. Pure apart from the counters it is handed and the random source it is given
(tests pass a seeded one).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from gateway.domain.model import ExplorationSettings
from gateway.routing.decision import Candidate, Decision


class RandomSource(Protocol):
    """What exploration draws from (``random.Random`` is one)."""

    def random(self) -> float: ...

    def randrange(self, stop: int, /) -> int: ...


@dataclass(slots=True)
class ExplorationCounts:
    """One configuration's calls decided in this process, and how many of them explored."""

    calls: int = 0
    explored: int = 0


def lacking_history(decision: Decision, min_calls: int) -> tuple[Candidate, ...]:
    """Eligible candidates, other than the one ranked first, with fewer than ``min_calls``
    calls for this operation in the history the decision read.

    A decision that read no history (callHistory off, telemetry off, providerPriority mode,
    or a failed read) knows no counts: nothing lacks history then.
    """
    if not decision.call_history:
        return ()
    return tuple(
        candidate
        for candidate in decision.candidates[1:]
        if candidate.history is not None and candidate.history.calls < min_calls
    )


def explore(
    decision: Decision,
    settings: ExplorationSettings,
    counts: ExplorationCounts,
    source: RandomSource,
) -> Candidate | None:
    """The candidate this call explores, or None to serve the decision's choice.

    Every call counts in ``counts.calls``. A call explores with probability ``share`` when
    some candidate lacks history, and never when that would put the explored calls above
    ``share`` of the calls counted so far: at every moment, explored ≤ share × calls.
    """
    counts.calls += 1
    pool = lacking_history(decision, settings.min_calls)
    if not pool:
        return None
    if counts.explored + 1 > settings.share * counts.calls:
        return None
    if source.random() >= settings.share:
        return None
    counts.explored += 1
    return pool[source.randrange(len(pool))]
