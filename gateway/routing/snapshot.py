"""Everything one routing decision reads, gathered before it is taken (so decide() does no I/O)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gateway.domain.model import Model, Provider, RoutingSettings
from gateway.domain.signals import HistoryFigures, HistoryKey


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Build new mappings on every refresh and never mutate them in place: decide() memoizes
    on the identity of these parts (see memo.py)."""

    models: tuple[Model, ...]  # every configured model, in config order
    providers: Mapping[str, Provider]
    routing: RoutingSettings
    health: Mapping[str, float]  # provider id -> score; absent = no samples in the window
    quality: Mapping[tuple[str, str], float]  # (provider id, model id) -> quality
    # None = the history was not read (callHistory off, telemetry off, or the read failed).
    history: Mapping[HistoryKey, HistoryFigures] | None
    open_circuits: frozenset[str]  # provider ids whose circuit refuses calls now
    telemetry_enabled: bool = True
