"""``POST /v1/messages/count_tokens``: a Messages body's input tokens, without a call.

The configuration is resolved as a call's would be (its key's permission checked); when
the model it resolves to is Claude, the provider counts: an Anthropic provider's own
``/messages/count_tokens`` (the body as sent, model replaced), Vertex AI's
``count-tokens:rawPredict``, Bedrock's CountTokens (a refusal of Vertex's or Bedrock's,
which count only some models and regions, leaves the estimate); otherwise the gateway
counts with its tokenizer (tiktoken, as for budget holds) and says so in
``x-gateway-token-count: estimate``. Nothing is generated, so nothing is billed, held
against a budget or recorded as a call (docs/messages.md#count_tokens).
"""

from __future__ import annotations

from typing import Any, Protocol

import msgspec

from gateway.domain.errors import (
    ConfigurationNotAllowed,
    ModelNotFound,
    UpstreamError,
    UpstreamFailed,
)
from gateway.domain.model import AdapterType, Endpoint, Model, Provider
from gateway.domain.settings import ApiKey, GatewayConfig
from gateway.domain.suggest import valid_hint
from gateway.inbound import InboundRequest
from gateway.pipeline.answers import Answer
from gateway.pipeline.resolve import Resolver
from gateway.upstream.base import UpstreamCall
from gateway.upstream.bedrock.native import natively_claude as bedrock_claude
from gateway.upstream.vertex.urls import ANTHROPIC, publisher
from gateway.usage.estimate import prompt_tokens
from gateway.usage.tokens import TokenCounter

_ENCODER = msgspec.json.Encoder()
COUNT_HEADER = "x-gateway-token-count"


class NativeCounter(Protocol):
    async def count_tokens(self, call: UpstreamCall) -> dict[str, Any]: ...


def counts_natively(provider: Provider, model: Model) -> bool:
    """The provider counts a Messages body for this model: Anthropic's, and Claude on
    Vertex AI and on Bedrock."""
    if provider.adapter is AdapterType.ANTHROPIC:
        return True
    if provider.adapter is AdapterType.VERTEX:
        return publisher(model.name) == ANTHROPIC
    return provider.adapter is AdapterType.BEDROCK and bedrock_claude(model.name)


class TokenCounting:
    def __init__(
        self,
        config: GatewayConfig,
        resolver: Resolver,
        adapters: NativeCounter,
        counter: TokenCounter,
    ) -> None:
        self._config = config
        self._resolver = resolver
        self._adapters = adapters
        self._counter = counter

    async def count(self, request: InboundRequest, key: ApiKey | None, request_id: str) -> Answer:
        """The answer; raises the GatewayError a refusal is."""
        name = request.configuration
        configuration = self._config.configurations.get(name)
        allowed = key.configurations if key is not None else None
        if configuration is None:
            usable = [c for c in self._config.configurations if allowed is None or c in allowed]
            hint = valid_hint(name, usable, "model")
            raise ModelNotFound(f"The model '{name}' does not exist. {hint}", param="model")
        if allowed is not None and configuration.id not in allowed:
            raise ConfigurationNotAllowed(
                f"This key may not use the configuration '{configuration.id}'.", param="model"
            )
        headers = {"x-gateway-configuration": configuration.id}
        target = self._resolver.resolve(configuration, request).target
        model_name = configuration.id
        if target is not None:
            headers["x-gateway-provider"] = target.provider.id
            headers["x-gateway-model"] = target.model.id
            model_name = target.model.name
        if target is not None and counts_natively(target.provider, target.model):
            call = UpstreamCall(
                provider=target.provider,
                model=target.model,
                endpoint=Endpoint.MESSAGES,
                body=request.body,
                stream=False,
                remaining_seconds=self._config.server.request_timeout_seconds,
                headers={**request.forward_headers, "x-request-id": request_id},
            )
            anthropic = target.provider.adapter is AdapterType.ANTHROPIC
            try:
                counted = await self._adapters.count_tokens(call)
            except UpstreamError as error:
                if not anthropic and error.status in (400, 404):
                    counted = None  # a model or region the cloud does not count for
                elif error.status is None or not error.body:
                    raise UpstreamFailed(f"The upstream failed ({error.kind}).") from error
                else:
                    return Answer(error.status, error.body, headers, error.content_type)
            if counted is not None:
                headers[COUNT_HEADER] = "provider"
                return Answer(200, _ENCODER.encode(counted), headers)
        tokens = await prompt_tokens(self._counter, request, model_name)
        headers[COUNT_HEADER] = "estimate"
        return Answer(200, _ENCODER.encode({"input_tokens": tokens.tokens}), headers)
