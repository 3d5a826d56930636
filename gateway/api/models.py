"""GET /v1/models: the configurations this key may use, in OpenAI's list shape, or in
Anthropic's when the request carries ``anthropic-version`` (the anthropic SDK's
``client.models.list()``, Claude Code)."""

from __future__ import annotations

from typing import Any

from litestar import Request, get

from gateway.domain.errors import AuthenticationFailed
from gateway.messages.models import anthropic_model_list
from gateway.runtime import Runtime


@get("/v1/models")
async def list_models(request: Request[Any, Any, Any]) -> dict[str, Any]:
    runtime: Runtime = request.app.state.runtime
    serving = runtime.serving
    allowed = None
    anthropic = "anthropic-version" in request.headers
    if not serving.keys.open:
        authorization = request.headers.get("authorization")
        presented = request.headers.get("x-api-key")
        if authorization is None and presented:
            authorization = f"Bearer {presented}"
        key = runtime.directory.identify(authorization)
        if key is None:
            raise AuthenticationFailed("Missing or invalid API key.")
        allowed = key.configurations
    ids = [cid for cid in serving.config.configurations if allowed is None or cid in allowed]
    if anthropic:
        return anthropic_model_list(ids)
    data = [{"id": cid, "object": "model", "created": 0, "owned_by": "gateway"} for cid in ids]
    return {"object": "list", "data": data}
