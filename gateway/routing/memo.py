"""A memo of decisions already taken on the current inputs, kept by the proxy's resolver.

decide() is pure, so a decision taken on the same configuration, operation, required
capabilities, mode and snapshot inputs is the same decision. The snapshot's parts change
only when a cache refreshes (health every minute, the history every five) or a circuit
changes state, so most calls are a dictionary lookup instead of a ranking.

Snapshot parts are compared by identity (the mappings) and by value (circuits, flags):
whoever builds a Snapshot must build new mappings on refresh, never mutate them in place.
"""

from __future__ import annotations

from gateway.domain.model import Capability, Configuration, Operation, PolicyMode
from gateway.routing.decision import Decision
from gateway.routing.ranker import decide
from gateway.routing.signals import RATIO_BOUND
from gateway.routing.snapshot import Snapshot

_Key = tuple[int, Operation, frozenset[Capability], PolicyMode | None, float | None]


def same_inputs(a: Snapshot, b: Snapshot) -> bool:
    return a is b or (
        a.models is b.models
        and a.providers is b.providers
        and a.health is b.health
        and a.quality is b.quality
        and a.history is b.history
        and a.telemetry_enabled == b.telemetry_enabled
        and a.open_circuits == b.open_circuits
        and (a.routing is b.routing or a.routing == b.routing)
    )


class DecisionMemo:
    """Not thread-safe: it lives on the event loop's single thread."""

    __slots__ = ("_entries", "_limit", "_snapshot")

    def __init__(self, limit: int = 4096) -> None:
        self._snapshot: Snapshot | None = None
        self._entries: dict[_Key, tuple[Configuration, Decision]] = {}
        self._limit = limit

    def decide(
        self,
        configuration: Configuration,
        operation: Operation,
        required: frozenset[Capability],
        snapshot: Snapshot,
        mode_override: PolicyMode | None = None,
    ) -> Decision:
        """decide(), or the decision it gave on these same inputs (shared: do not mutate)."""
        args = (configuration, operation, required, snapshot, mode_override, RATIO_BOUND)
        found = self.lookup(*args)
        if found is not None:
            return found
        decision = decide(configuration, operation, required, snapshot, mode_override)
        self.store(configuration, operation, required, mode_override, RATIO_BOUND, decision)
        return decision

    def lookup(
        self,
        configuration: Configuration,
        operation: Operation,
        required: frozenset[Capability],
        snapshot: Snapshot,
        mode_override: PolicyMode | None,
        bound: float | None,
    ) -> Decision | None:
        if self._snapshot is None or not same_inputs(self._snapshot, snapshot):
            self._snapshot = snapshot  # new inputs: every decision is taken afresh
            self._entries.clear()
            return None
        entry = self._entries.get((id(configuration), operation, required, mode_override, bound))
        # The entry holds its configuration, so an id cannot be reused while it is stored.
        if entry is None or entry[0] is not configuration:
            return None
        return entry[1]

    def store(
        self,
        configuration: Configuration,
        operation: Operation,
        required: frozenset[Capability],
        mode_override: PolicyMode | None,
        bound: float | None,
        decision: Decision,
    ) -> None:
        if len(self._entries) >= self._limit:
            self._entries.clear()
        key = (id(configuration), operation, required, mode_override, bound)
        self._entries[key] = (configuration, decision)

    def clear(self) -> None:
        self._snapshot = None
        self._entries.clear()
