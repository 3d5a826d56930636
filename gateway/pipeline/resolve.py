"""Resolve a configuration to a target: the fixed model, or the decision's choice."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gateway.circuits import CircuitStates
from gateway.domain.failures import ErrorClass, ResolutionFailure
from gateway.domain.model import Capability, Configuration, Enforcement, Model, PolicyMode
from gateway.domain.settings import GatewayConfig
from gateway.inbound import InboundRequest
from gateway.pipeline.context import Target
from gateway.routing.decision import Decision
from gateway.routing.eligibility import enforcement_for, missing_for_operation
from gateway.routing.exploration import ExplorationCounts, RandomSource, explore
from gateway.routing.memo import DecisionMemo
from gateway.routing.snapshot import Snapshot


@dataclass(slots=True)
class Resolution:
    configuration: Configuration
    target: Target | None
    decision: Decision | None
    failure: ResolutionFailure | None = None  # why nothing can be attempted
    # Fixed mode: capabilities the call needs that the model does not declare (refused
    # when enforced, a warning when observed).
    missing: frozenset[Capability] = frozenset()
    # routing.exploration sent the call to a candidate lacking history, not to the first.
    explored: bool = False

    @property
    def refused_for_capability(self) -> bool:
        """Nothing to attempt, because the call needs what the model does not declare."""
        if self.decision is not None:
            return self.target is None and self.decision.all_refusals_operation_capability()
        return self.target is None and bool(self.missing)

    @property
    def warnings(self) -> tuple[str, ...]:
        """Observe mode: what enforce mode would have refused the attempted model for."""
        if self.target is None:
            return ()
        if self.decision is not None:  # the attempted candidate's (an explored one's too)
            chosen = self.target.model.id
            found = (c.warnings for c in self.decision.candidates if c.model.id == chosen)
            return next(found, ())
        if not self.missing:
            return ()
        return (f"OPERATION_CAPABILITY_MISSING: {', '.join(sorted(self.missing))}",)


class Resolver:
    def __init__(
        self,
        config: GatewayConfig,
        breakers: CircuitStates,
        snapshot: Callable[[], Snapshot],
        health_scores: Callable[[], Mapping[str, float]],
        *,
        exploration: dict[str, ExplorationCounts] | None = None,
        random_source: RandomSource | None = None,
    ) -> None:
        self._config = config
        self._breakers = breakers
        self._snapshot = snapshot
        self._health_scores = health_scores
        # Most calls between two signal refreshes meet the same inputs: a lookup, not a ranking.
        self._memo = DecisionMemo()
        # routing.exploration's counters, per configuration id, for this process only.
        self.exploration: dict[str, ExplorationCounts] = (
            exploration if exploration is not None else {}
        )
        self._random: RandomSource = random_source or random.Random()

    def resolve(
        self,
        configuration: Configuration,
        request: InboundRequest,
        mode_override: PolicyMode | None = None,
        *,
        may_explore: bool = False,
    ) -> Resolution:
        """``may_explore``: the call's own configuration (not a fallback, not a budget
        estimate) may be sent to a candidate lacking history (``routing.exploration``)."""
        if configuration.is_fixed:
            return self._resolve_fixed(configuration, request)
        decision = self._memo.decide(
            configuration, request.operation, request.required, self._snapshot(), mode_override
        )
        if decision.selected is None:
            return Resolution(configuration, None, decision, ErrorClass.NO_ELIGIBLE_MODEL)
        settings = self._config.routing.exploration
        if may_explore and settings is not None:
            counts = self.exploration.setdefault(configuration.id, ExplorationCounts())
            chosen = explore(decision, settings, counts, self._random)
            if chosen is not None:
                target = Target(configuration, chosen.model, chosen.provider, decision)
                return Resolution(configuration, target, decision, explored=True)
        model = decision.selected
        provider = self._config.provider_of(model)
        return Resolution(configuration, Target(configuration, model, provider, decision), decision)

    def _resolve_fixed(self, configuration: Configuration, request: InboundRequest) -> Resolution:
        assert configuration.model is not None  # the loader guarantees it
        model: Model = self._config.model(configuration.model)
        if not model.active:  # an inactive model serves nothing, fixed mode included
            return Resolution(configuration, None, None, ErrorClass.NO_ELIGIBLE_MODEL)
        # As in criteria mode: a model that declares no capabilities is not refused.
        missing = missing_for_operation(model, request.required)
        observe = enforcement_for(configuration, self._config.routing) is Enforcement.OBSERVE
        if missing and not observe:
            return Resolution(configuration, None, None, ErrorClass.NO_ELIGIBLE_MODEL, missing)
        provider = self._config.provider_of(model)
        if provider.id in self._breakers.open_providers(time.monotonic()):
            return Resolution(configuration, None, None, ErrorClass.CIRCUIT_OPEN)
        target = Target(configuration, model, provider, None)
        return Resolution(configuration, target, None, missing=missing)

    def resolved(self, step: Configuration | Resolution, request: InboundRequest) -> Resolution:
        """A plan step as a resolution: taken already, or taken now."""
        return step if isinstance(step, Resolution) else self.resolve(step, request)

    def fallbacks(
        self, configuration: Configuration, request: InboundRequest
    ) -> list[Configuration | Resolution]:
        """The fallback list, not followed transitively.

        A configuration is resolved when its turn comes; with ``health.reorderFallback``
        each is resolved now, to learn the provider it would use, and that resolution is
        the one attempted (a call is decided once).
        """
        chain = [self._config.configurations[c] for c in configuration.fallback]
        if not self._config.health.reorder_fallback or len(chain) < 2:
            return list(chain)
        scores = self._health_scores()
        resolved = [self.resolve(c, request) for c in chain]

        def unhealthiness(resolution: Resolution) -> float:
            return -_health_of(resolution, scores)

        # sorted() is stable: equal health keeps the configured order (unknown = 0.5).
        return [*sorted(resolved, key=unhealthiness)]


def _health_of(resolution: Resolution, scores: Mapping[str, float]) -> float:
    if resolution.target is None:
        return 0.5
    return scores.get(resolution.target.provider.id, 0.5)
