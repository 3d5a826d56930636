"""Value objects shared by every layer. Pure: imports nothing of the gateway's I/O."""

from gateway.domain.model import (
    AdapterType,
    BudgetLimits,
    BudgetSpec,
    CacheSpec,
    Capability,
    Configuration,
    Criteria,
    Model,
    Operation,
    PolicyMode,
    Price,
    Provider,
    RoutingSettings,
)
from gateway.domain.settings import (
    ApiKey,
    AuthSettings,
    CacheStoreSettings,
    CircuitBreakerSettings,
    DatabaseSettings,
    GatewayConfig,
    HealthSettings,
    ServerSettings,
    TelemetrySettings,
)
from gateway.domain.signals import HealthSample, HistoryFigures, HistoryKey
from gateway.domain.usage import Usage

__all__ = [
    "AdapterType",
    "ApiKey",
    "AuthSettings",
    "BudgetLimits",
    "BudgetSpec",
    "CacheSpec",
    "CacheStoreSettings",
    "Capability",
    "CircuitBreakerSettings",
    "Configuration",
    "Criteria",
    "DatabaseSettings",
    "GatewayConfig",
    "HealthSample",
    "HealthSettings",
    "HistoryFigures",
    "HistoryKey",
    "Model",
    "Operation",
    "PolicyMode",
    "Price",
    "Provider",
    "RoutingSettings",
    "ServerSettings",
    "TelemetrySettings",
    "Usage",
]
