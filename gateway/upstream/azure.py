"""Azure OpenAI: the OpenAI-compatible adapter with Azure's URL and key header."""

from __future__ import annotations

from gateway.domain.model import Endpoint
from gateway.upstream.base import UpstreamCall
from gateway.upstream.openai_compat import OpenAICompatAdapter


class AzureOpenAIAdapter(OpenAICompatAdapter):
    """Deployment URL, ``api-version`` query, ``api-key`` header.

    The model's ``name`` is the deployment."""

    def url(self, call: UpstreamCall) -> str:
        base = call.provider.base_url.rstrip("/")
        if call.endpoint is Endpoint.RESPONSES:  # no deployment in the path: it is `model`
            return f"{base}/openai/responses?api-version={call.provider.api_version}"
        return (
            f"{base}/openai/deployments/{call.model.name}/{call.endpoint.value}"
            f"?api-version={call.provider.api_version}"
        )

    def headers(self, call: UpstreamCall) -> dict[str, str]:
        headers = {"content-type": "application/json", "accept-encoding": "identity"}
        if call.provider.api_key:
            headers["api-key"] = call.provider.api_key
        headers.update(call.headers)
        return headers
