"""A circuit as routing treats it now: the state the console, ``/admin/api/providers`` and
``/metrics`` show, read through the CircuitStates interface only (no I/O).

- ``closed``: calls go to the provider.
- ``open`` until T: every call is refused until T (the cooldown's end).
- ``half_open``, trial ``allowed``: the cooldown has ended; the next call the decision
  sends there is the one trial call (the provider is no longer refused).
- ``half_open``, trial ``in_flight``: the trial call is running; other calls are refused
  until its verdict, or until T when it never comes (a fresh trial is then admitted).

The gauge's value orders them by how much they refuse: 0 closed, 1 half-open, 2 open.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from gateway.circuits.states import CircuitStates
from gateway.routing.circuit import CircuitState

State = Literal["closed", "open", "half_open"]
Trial = Literal["allowed", "in_flight"]
GAUGE_VALUES: dict[State, int] = {"closed": 0, "half_open": 1, "open": 2}


@dataclass(frozen=True, slots=True)
class CircuitView:
    state: State
    until: float | None = None  # the clock's time: when refusing ends, None when it does not
    trial: Trial | None = None  # half_open only

    @property
    def gauge(self) -> int:
        return GAUGE_VALUES[self.state]


CLOSED = CircuitView("closed")


def circuit_views(
    breakers: CircuitStates, providers: Iterable[str], now: float
) -> dict[str, CircuitView]:
    """Each provider's circuit as routing treats it at ``now`` (the breakers' clock)."""
    refused = breakers.open_providers(now)
    views: dict[str, CircuitView] = {}
    for provider in providers:
        state = breakers.state(provider, now)
        if state is CircuitState.CLOSED:
            views[provider] = CLOSED
        elif provider not in refused:
            views[provider] = CircuitView("half_open", trial="allowed")
        elif state is CircuitState.HALF_OPEN:
            views[provider] = CircuitView(
                "half_open", until=breakers.reopens_at(provider), trial="in_flight"
            )
        else:
            views[provider] = CircuitView("open", until=breakers.reopens_at(provider))
    return views
