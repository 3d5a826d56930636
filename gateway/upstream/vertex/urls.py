"""Vertex AI endpoints (pure): which publisher serves a model, and the model's URL."""

from __future__ import annotations

from gateway.domain.model import Provider

GOOGLE = "google"
ANTHROPIC = "anthropic"


def publisher(model_name: str) -> str:
    """Claude models are Anthropic's on Vertex; every other model is Google's."""
    return ANTHROPIC if model_name.startswith("claude") else GOOGLE


def model_url(provider: Provider, model_name: str, method: str) -> str:
    """``{baseUrl}/projects/{project}/locations/{location}/publishers/{publisher}/models/
    {model}:{method}``."""
    base = provider.base_url.rstrip("/")
    return (
        f"{base}/projects/{provider.project}/locations/{provider.location}"
        f"/publishers/{publisher(model_name)}/models/{model_name}:{method}"
    )


def count_url(provider: Provider) -> str:
    """Claude's token count on Vertex: ``…/publishers/anthropic/models/count-tokens:rawPredict``
    (the model is named in the body)."""
    base = provider.base_url.rstrip("/")
    return (
        f"{base}/projects/{provider.project}/locations/{provider.location}"
        f"/publishers/{ANTHROPIC}/models/count-tokens:rawPredict"
    )
