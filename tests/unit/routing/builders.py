"""Small builders for routing tests: every field a test does not name takes a neutral default."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal

from gateway.domain.model import (
    AdapterType,
    Capability,
    Configuration,
    ConfigurationMode,
    Criteria,
    Model,
    Operation,
    PolicyMode,
    Price,
    Provider,
    RoutingSettings,
)
from gateway.domain.signals import HealthSample, HistoryFigures, HistoryKey
from gateway.routing.health import health_score
from gateway.routing.snapshot import Snapshot

CHAT = frozenset({Capability.CHAT})


def provider(
    pid: str = "p1", *, adapter: AdapterType = AdapterType.OPENAI, priority: int = 50
) -> Provider:
    return Provider(id=pid, adapter=adapter, base_url="http://upstream.test", priority=priority)


def price(input_: str, output: str) -> Price:
    return Price(input=Decimal(input_), output=Decimal(output))


def model(
    mid: str,
    provider_id: str = "p1",
    *,
    caps: Iterable[Capability] = (Capability.CHAT,),
    price: Price | None = None,
    context: int | None = None,
    active: bool = True,
    default: bool = False,
) -> Model:
    return Model(
        id=mid,
        provider=provider_id,
        name=mid,
        capabilities=frozenset(caps),
        context_length=context,
        price=price,
        active=active,
        default=default,
    )


def config(
    mode: PolicyMode | None = None, *, criteria: Criteria | None = None, cid: str = "smart"
) -> Configuration:
    return Configuration(
        id=cid, mode=ConfigurationMode.CRITERIA, policy_mode=mode, criteria=criteria or Criteria()
    )


def figures(
    calls: int, latency_ms: float | None, cost: str | None = None, costed: int | None = None
) -> HistoryFigures:
    costed_calls = (calls if cost is not None else 0) if costed is None else costed
    return HistoryFigures(
        calls=calls,
        mean_latency_ms=latency_ms,
        costed_calls=costed_calls,
        mean_cost=Decimal(cost) if cost is not None else None,
    )


def history(
    entries: Mapping[str, HistoryFigures],
    operation: Operation = Operation.CHAT,
    models: Iterable[Model] = (),
) -> dict[HistoryKey, HistoryFigures]:
    """Key figures by model id; the provider id is looked up from ``models`` (default p1)."""
    owner = {m.id: m.provider for m in models}
    return {(owner.get(mid, "p1"), mid, operation): f for mid, f in entries.items()}


def failing_health(failed: int, of: int, latency_ms: float = 1000.0) -> float:
    """A provider failing ``failed`` first attempts in ``of``, at a given mean latency."""
    score = health_score(HealthSample(samples=of, successes=of - failed, avg_latency_ms=latency_ms))
    assert score is not None
    return score


def snapshot(
    models: Iterable[Model],
    *,
    providers: Iterable[Provider] | None = None,
    routing: RoutingSettings | None = None,
    health: Mapping[str, float] | None = None,
    quality: Mapping[tuple[str, str], float] | None = None,
    history: Mapping[HistoryKey, HistoryFigures] | None = None,
    open_circuits: Iterable[str] = (),
    telemetry_enabled: bool = True,
) -> Snapshot:
    model_tuple = tuple(models)
    known = {p.id: p for p in providers or ()}
    for m in model_tuple:
        known.setdefault(m.provider, provider(m.provider))
    return Snapshot(
        models=model_tuple,
        providers=known,
        routing=routing or RoutingSettings(),
        health=dict(health or {}),
        quality=dict(quality or {}),
        history=history,
        open_circuits=frozenset(open_circuits),
        telemetry_enabled=telemetry_enabled,
    )


def with_history(
    mode: PolicyMode = PolicyMode.BALANCED, *, call_history_min_calls: int = 5
) -> RoutingSettings:
    return RoutingSettings(
        policy_mode=mode, call_history=True, call_history_min_calls=call_history_min_calls
    )
