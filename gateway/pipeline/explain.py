"""The "Why this model?" readout: the proxy's own decide(), run on a given snapshot."""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypeVar

from gateway.domain.errors import InvalidRequest, ModelNotFound
from gateway.domain.model import Operation, PolicyMode
from gateway.domain.settings import GatewayConfig
from gateway.domain.suggest import valid_hint
from gateway.routing.operation import required_for
from gateway.routing.ranker import decide
from gateway.routing.readout import explain, explain_fixed
from gateway.routing.snapshot import Snapshot

E = TypeVar("E", bound=StrEnum)


def parse_choice(cls: type[E], value: str, name: str) -> E:
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(v.value for v in cls)
        message = f"Unknown {name} '{value}' (expected one of {allowed})."
        raise InvalidRequest(message, param=name) from None


def explain_configuration(
    config: GatewayConfig,
    snapshot: Snapshot,
    configuration_id: str,
    operation_name: str,
    mode_name: str | None,
) -> dict[str, Any]:
    configuration = config.configurations.get(configuration_id)
    if configuration is None:
        hint = valid_hint(configuration_id, config.configurations, "configuration")
        message = f"Unknown configuration '{configuration_id}'. {hint}"
        raise ModelNotFound(message, param="configuration")
    operation = parse_choice(Operation, operation_name, "operation")
    mode = parse_choice(PolicyMode, mode_name, "mode") if mode_name else None
    if configuration.is_fixed:
        assert configuration.model is not None  # the loader guarantees it
        return explain_fixed(configuration, config.model(configuration.model), operation)
    decision = decide(configuration, operation, required_for(operation), snapshot, mode)
    return explain(decision, snapshot.routing.exploration)
