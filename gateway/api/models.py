"""GET /v1/models: the configurations this key may use, in OpenAI's list shape."""

from __future__ import annotations

from typing import Any

from litestar import Request, get

from gateway.domain.errors import AuthenticationFailed
from gateway.runtime import Runtime


@get("/v1/models")
async def list_models(request: Request[Any, Any, Any]) -> dict[str, Any]:
    runtime: Runtime = request.app.state.runtime
    serving = runtime.serving
    allowed = None
    if not serving.keys.open:
        key = runtime.directory.identify(request.headers.get("authorization"))
        if key is None:
            raise AuthenticationFailed("Missing or invalid API key.")
        allowed = key.configurations
    data = [
        {"id": cid, "object": "model", "created": 0, "owned_by": "gateway"}
        for cid in serving.config.configurations
        if allowed is None or cid in allowed
    ]
    return {"object": "list", "data": data}
