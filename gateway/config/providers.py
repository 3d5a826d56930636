"""Phase 2 for ``providers``: each entry checked and resolved to a ``Provider``, with its
adapter's defaults (base URL, API version, Responses API) and its adapter's own rules
(Bedrock's region, Vertex's project and location, the optional packages they need). Pure:
no I/O; an optional package is looked for, never imported.
"""

from __future__ import annotations

import re
from importlib.util import find_spec
from typing import Any
from urllib.parse import urlsplit

from gateway.config.errors import Problems, child, item
from gateway.config.references import Ids, failed_ids, parsed_entries
from gateway.config.schema import ProviderSchema
from gateway.domain.model import AdapterType, Provider

ANTHROPIC_DEFAULT_VERSION = "2023-06-01"
# Where an adapter's API is when the provider names no baseUrl.
DEFAULT_BASE_URLS = {AdapterType.GEMINI: "https://generativelanguage.googleapis.com/v1beta"}
# Claude on Vertex AI takes anthropic_version in the body, with Vertex's own value.
VERTEX_ANTHROPIC_VERSION = "vertex-2023-10-16"
_LOCATION = re.compile(r"[a-z][a-z0-9-]{1,62}")


def resolve_providers(
    entries: list[ProviderSchema], raw: Any, problems: Problems
) -> tuple[dict[str, Provider], Ids]:
    ids = Ids("provider", problems, failed_ids(raw, ["providers"], entries))
    providers: dict[str, Provider] = {}
    for index, entry in parsed_entries(entries):
        path = item("providers", index)
        if ids.claim(path, entry.id):
            providers[entry.id] = _provider(entry, path, problems)
    return providers, ids


def _provider(entry: ProviderSchema, path: str, problems: Problems) -> Provider:
    base_url = entry.base_url or DEFAULT_BASE_URLS.get(entry.adapter, "")
    if entry.adapter is AdapterType.BEDROCK:
        base_url = _bedrock_base_url(entry, path, problems)
    elif entry.region is not None:
        problems.add(child(path, "region"), "only adapter 'bedrock' takes a region")
    if entry.adapter not in (AdapterType.ECHO, AdapterType.BEDROCK, AdapterType.VERTEX) or (
        entry.adapter is AdapterType.VERTEX and entry.base_url
    ):
        if entry.base_url is None and not base_url:
            problems.add(child(path, "baseUrl"), f"required for adapter '{entry.adapter}'")
        elif not _is_http_url(base_url):
            problems.add(child(path, "baseUrl"), "must be an http:// or https:// URL")
    api_version = entry.api_version
    if entry.adapter is AdapterType.AZURE_OPENAI and api_version is None:
        problems.add(child(path, "apiVersion"), "required for adapter 'azure_openai'")
    if entry.adapter is AdapterType.ANTHROPIC and api_version is None:
        api_version = ANTHROPIC_DEFAULT_VERSION
    if entry.adapter is AdapterType.VERTEX:
        base_url = _vertex(entry, path, problems) or base_url
        api_version = api_version or VERTEX_ANTHROPIC_VERSION
    elif entry.project or entry.location or entry.credentials_file:
        problems.add(path, "project, location and credentialsFile are for adapter 'vertex' only")
    responses_api = entry.responses_api
    if responses_api is None:
        responses_api = entry.adapter in _NATIVE_RESPONSES
    elif responses_api and entry.adapter in _NO_RESPONSES:
        problems.add(
            child(path, "responsesApi"), f"adapter '{entry.adapter}' offers no Responses API"
        )
    return Provider(
        id=entry.id,
        adapter=entry.adapter,
        base_url=base_url,
        api_key=entry.api_key or None,  # an empty key is no key
        priority=entry.priority,
        timeout_seconds=entry.timeout_seconds,
        max_retries=entry.max_retries,
        stream_usage=entry.stream_usage,
        api_version=api_version,
        responses_api=responses_api,
        region=entry.region,
        project=entry.project,
        location=entry.location,
        credentials_file=entry.credentials_file,
    )


# Bedrock Runtime's endpoint in a region (AWS's naming rule; baseUrl overrides it).
BEDROCK_URL = "https://bedrock-runtime.{region}.amazonaws.com"


def _bedrock_base_url(entry: ProviderSchema, path: str, problems: Problems) -> str:
    if find_spec("botocore") is None:  # looked for, not imported: serving imports it
        problems.add(
            child(path, "adapter"),
            "adapter 'bedrock' needs botocore (AWS signing and event streams), which is not "
            "installed: pip install 'llm-gateway[bedrock]'",
        )
    if entry.region is None:
        problems.add(child(path, "region"), "required for adapter 'bedrock' (e.g. us-east-1)")
        return ""
    if entry.base_url is None:
        return BEDROCK_URL.format(region=entry.region)
    if not _is_http_url(entry.base_url):
        problems.add(child(path, "baseUrl"), "must be an http:// or https:// URL")
    return entry.base_url


def _has_module(name: str) -> bool:
    try:
        return find_spec(name) is not None
    except ImportError:  # its parent package is missing
        return False


def _vertex(entry: ProviderSchema, path: str, problems: Problems) -> str | None:
    """A vertex provider's checks, and its base URL when it names none: the location's
    regional endpoint (``global``: the global one)."""
    if not _has_module("google.auth"):  # looked for, not imported: a call imports it
        problems.add(
            child(path, "adapter"),
            "adapter 'vertex' needs google-auth (Google Cloud credentials), which is not "
            "installed: pip install 'llm-gateway[vertex]'",
        )
    if entry.project is None:
        problems.add(child(path, "project"), "required for adapter 'vertex'")
    if entry.location is None:
        problems.add(child(path, "location"), "required for adapter 'vertex'")
        return None
    if not _LOCATION.fullmatch(entry.location):
        problems.add(
            child(path, "location"), "must be a Google Cloud location such as us-central1 or global"
        )
        return None
    if entry.base_url is not None:
        return None
    if entry.location == "global":
        return "https://aiplatform.googleapis.com/v1"
    return f"https://{entry.location}-aiplatform.googleapis.com/v1"


# Adapters whose API offers /responses (docs/responses.md); the others translate to chat.
_NATIVE_RESPONSES = frozenset({AdapterType.OPENAI, AdapterType.AZURE_OPENAI})
# Adapters that build their own requests: a native Responses call cannot reach them.
_NO_RESPONSES = frozenset(
    {
        AdapterType.ANTHROPIC,
        AdapterType.GEMINI,
        AdapterType.VERTEX,
        AdapterType.ECHO,
        AdapterType.BEDROCK,
    }
)


def _is_http_url(value: str) -> bool:
    try:
        parts = urlsplit(value)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)
