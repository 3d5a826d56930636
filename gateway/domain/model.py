"""Providers, models, configurations and the routing settings, as resolved from config.

Prices are exact decimals (USD per 1M tokens); ``None`` means "not known", never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from typing import Literal

from gateway.domain.limits import RateLimit


class Capability(StrEnum):
    CHAT = "chat"
    COMPLETION = "completion"
    EMBEDDINGS = "embeddings"
    VISION = "vision"
    TOOLS = "tools"
    STREAMING = "streaming"
    JSON_MODE = "json_mode"
    # Takes a reasoning effort (OpenAI's reasoning_effort): what Anthropic's thinking becomes.
    REASONING = "reasoning"


class Endpoint(StrEnum):
    """The endpoint a call came in on (OpenAI's, and Anthropic's Messages API): its value is
    the path after ``/v1/``."""

    CHAT = "chat/completions"
    EMBEDDINGS = "embeddings"
    COMPLETIONS = "completions"
    RESPONSES = "responses"
    MESSAGES = "messages"  # Anthropic's Messages API (docs/messages.md)

    @property
    def path(self) -> str:
        return f"/v1/{self.value}"

    @property
    def api(self) -> str:
        """The name telemetry.inbound_api records: ``chat``, else the path after ``/v1/``."""
        return "chat" if self is Endpoint.CHAT else self.value


class Operation(StrEnum):
    """What a call runs, from its endpoint and body: it keys the call history."""

    CHAT = "chat"
    TOOLS = "tools"
    VISION = "vision"
    STREAM = "stream"
    EMBEDDING = "embedding"
    COMPLETION = "completion"
    RESPONSES = "responses"  # POST /v1/responses, whole
    RESPONSES_STREAM = "responses_stream"  # POST /v1/responses with stream: true


class PolicyMode(StrEnum):
    PROVIDER_PRIORITY = "providerPriority"
    BALANCED = "balanced"
    QUALITY = "quality"
    ECONOMY = "economy"


class ConfigurationMode(StrEnum):
    FIXED = "fixed"
    CRITERIA = "criteria"


class Enforcement(StrEnum):
    """``operationCapabilityEnforcement``: refuse a model that lacks what the call needs,
    or send the call anyway and log a warning."""

    ENFORCE = "enforce"
    OBSERVE = "observe"


class CostBasis(StrEnum):
    """What a decision's cost signal was computed from (the row's ``routing_cost_basis``)."""

    LIST = "list"  # the models' list prices
    MEASURED = "measured"  # the call history's measured cost per call


class AdapterType(StrEnum):
    OPENAI = "openai"
    AZURE_OPENAI = "azure_openai"
    ANTHROPIC = "anthropic"
    GEMINI = "gemini"  # Google AI Studio (the Gemini API)
    VERTEX = "vertex"  # Google Cloud Vertex AI: Gemini and Claude models
    OLLAMA = "ollama"
    OPENROUTER = "openrouter"
    GROQ = "groq"
    TOGETHER = "together"
    MISTRAL = "mistral"
    CUSTOM = "custom"
    ECHO = "echo"  # built-in demo adapter: answers locally, needs no key
    BEDROCK = "bedrock"  # AWS Bedrock Runtime (Converse), SigV4 or a Bedrock API key


@dataclass(frozen=True, slots=True)
class PriceTier:
    """The prices in force for a call whose prompt has more than ``above_input_tokens``
    tokens (cached ones included): a long-context price, USD per 1M tokens."""

    above_input_tokens: int
    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None


@dataclass(frozen=True, slots=True)
class Price:
    """USD per 1M tokens, with the long-context tiers some providers charge.

    A tier is a cliff, as the providers bill it: a prompt above its threshold pays the
    tier's prices for *all* its tokens, input and output alike (``at``).
    """

    input: Decimal
    output: Decimal
    cache_read: Decimal | None = None
    cache_write: Decimal | None = None
    tiers: tuple[PriceTier, ...] = ()  # ascending thresholds

    @property
    def combined(self) -> Decimal:
        """The list price the ranker compares: the base tier's."""
        return self.input + self.output

    def at(self, input_tokens: int) -> Price:
        """The prices a call with ``input_tokens`` prompt tokens pays: its highest tier
        whose threshold it passes, else the base prices."""
        for tier in reversed(self.tiers):
            if input_tokens > tier.above_input_tokens:
                return Price(tier.input, tier.output, tier.cache_read, tier.cache_write)
        return self


@dataclass(frozen=True, slots=True)
class Provider:
    id: str
    adapter: AdapterType
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    priority: int = 50
    timeout_seconds: float = 120.0
    max_retries: int = 2
    stream_usage: bool = True
    api_version: str | None = None  # azure_openai's api-version, anthropic's anthropic-version
    # Offers OpenAI's Responses API: /v1/responses is forwarded as is, not translated to chat.
    responses_api: bool = False
    region: str | None = None  # bedrock: the AWS region (signing and the default baseUrl)
    # vertex: the Google Cloud project and location; the service-account JSON's path
    # (None: Application Default Credentials).
    project: str | None = None
    location: str | None = None
    credentials_file: str | None = None


@dataclass(frozen=True, slots=True)
class Model:
    id: str
    provider: str  # provider id
    name: str  # what the upstream is sent
    capabilities: frozenset[Capability] = frozenset()
    context_length: int | None = None
    max_output_tokens: int | None = None
    price: Price | None = None
    active: bool = True
    default: bool = False
    order: int = 0  # position in the YAML: the final tiebreak
    # Where ``price`` came from: "config" (the YAML) or "catalog:<data version>".
    price_source: str | None = None
    # The provider account's own quota for this model (gateway.limits): at it, the model
    # is not sent the call.
    rate_limit: RateLimit | None = None


@dataclass(frozen=True, slots=True)
class Criteria:
    capabilities: frozenset[Capability] = frozenset()
    adapter_types: frozenset[AdapterType] | None = None
    min_context_length: int = 0
    max_cost_input: Decimal = Decimal(0)
    prefer_lowest_cost: bool = False


@dataclass(frozen=True, slots=True)
class BudgetLimits:
    """0 or None = unlimited."""

    requests: int | None = None
    tokens: int | None = None
    cost: Decimal | None = None

    @property
    def unlimited(self) -> bool:
        return not (self.requests or self.tokens or self.cost)


@dataclass(frozen=True, slots=True)
class BudgetSpec:
    daily: BudgetLimits | None = None
    monthly: BudgetLimits | None = None


@dataclass(frozen=True, slots=True)
class CacheSpec:
    ttl_seconds: int
    scope: str = "configuration"  # configuration | key


@dataclass(frozen=True, slots=True)
class Configuration:
    id: str
    mode: ConfigurationMode
    model: str | None = None  # model id, fixed mode
    policy_mode: PolicyMode | None = None  # overrides routing.policyMode
    fallback: tuple[str, ...] = ()
    criteria: Criteria = Criteria()
    budget: BudgetSpec | None = None
    cache: CacheSpec | None = None
    # None: routing.operationCapabilityEnforcement decides.
    operation_capability_enforcement: Enforcement | None = None
    rate_limit: RateLimit | None = None  # every key's calls to it together (gateway.limits)

    @property
    def is_fixed(self) -> bool:
        return self.mode is ConfigurationMode.FIXED


LatencyStatistic = Literal["mean", "p50", "p90"]  # routing.callHistoryStatistic
LatencyMeasure = Literal["total", "ttft"]  # routing.streamLatency


@dataclass(frozen=True, slots=True)
class ExplorationSettings:
    """``routing.exploration``: a bounded share of a criteria configuration's calls goes to
    eligible candidates with fewer than ``min_calls`` calls in the history."""

    share: float = 0.02
    min_calls: int = 5


@dataclass(frozen=True, slots=True)
class RoutingSettings:
    policy_mode: PolicyMode = PolicyMode.PROVIDER_PRIORITY
    call_history: bool = False
    call_history_days: int = 7
    call_history_min_calls: int = 5
    call_history_cache_seconds: int = 300
    call_history_statistic: LatencyStatistic = "mean"
    stream_latency: LatencyMeasure = "ttft"
    operation_capability_enforcement: Enforcement = Enforcement.ENFORCE
    list_price_ceiling: Decimal = Decimal("1.00")
    exploration: ExplorationSettings | None = None  # None: off
