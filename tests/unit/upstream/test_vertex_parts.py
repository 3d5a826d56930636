"""Vertex AI's pure parts: its provider's configuration, URLs, :predict embeddings, the
optional extra, and that google-auth stays out of a process without a vertex call."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gateway.config import providers
from gateway.domain.model import AdapterType
from gateway.upstream.vertex.embeddings import from_predict_response, predict_request
from gateway.upstream.vertex.urls import model_url, publisher
from tests.unit.config.support import load, problems_of

VERTEX = """
providers:
  - {{id: gcp, adapter: vertex, project: proj-1, {fields}}}
models:
  - {{id: m1, provider: gcp, name: gemini-2.5-flash}}
"""


def test_a_vertex_provider_takes_its_regional_or_global_endpoint() -> None:
    regional = load(VERTEX.format(fields="location: europe-west4")).providers["gcp"]
    assert regional.adapter is AdapterType.VERTEX
    assert regional.base_url == "https://europe-west4-aiplatform.googleapis.com/v1"
    assert regional.api_version == "vertex-2023-10-16"
    assert regional.credentials_file is None  # Application Default Credentials
    assert model_url(regional, "gemini-2.5-flash", "generateContent") == (
        "https://europe-west4-aiplatform.googleapis.com/v1/projects/proj-1/locations/"
        "europe-west4/publishers/google/models/gemini-2.5-flash:generateContent"
    )
    glob = load(VERTEX.format(fields="location: global, credentialsFile: /k.json")).providers
    assert glob["gcp"].base_url == "https://aiplatform.googleapis.com/v1"
    assert glob["gcp"].credentials_file == "/k.json"
    assert model_url(glob["gcp"], "claude-sonnet-4-5", "rawPredict").endswith(
        "/projects/proj-1/locations/global/publishers/anthropic/models/claude-sonnet-4-5:rawPredict"
    )
    assert (publisher("claude-opus-4-1"), publisher("gemini-3-pro")) == ("anthropic", "google")


def test_a_vertex_provider_needs_its_location_and_others_take_no_project() -> None:
    assert problems_of(VERTEX.format(fields="priority: 1")) == [
        "providers[0].location: required for adapter 'vertex'"
    ]
    assert problems_of(VERTEX.format(fields="location: 'Not A Place'")) == [
        "providers[0].location: must be a Google Cloud location such as us-central1 or global"
    ]
    text = """
    providers:
      - {id: p, adapter: openai, baseUrl: "https://x.example/v1", project: nope}
    models:
      - {id: m1, provider: p}
    """
    assert problems_of(text) == [
        "providers[0]: project, location and credentialsFile are for adapter 'vertex' only"
    ]


def test_a_vertex_provider_without_google_auth_installed_is_a_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = VERTEX.format(fields="location: us-central1")
    load(text)  # installed here (the dev extra holds it)
    monkeypatch.setattr(providers, "_has_module", lambda name: name != "google.auth")
    assert problems_of(text) == [
        "providers[0].adapter: adapter 'vertex' needs google-auth (Google Cloud "
        "credentials), which is not installed: pip install 'llm-gateway[vertex]'"
    ]


def test_predict_embeddings_translate_and_count_tokens() -> None:
    body = {"input": ["a", "bb"], "dimensions": 4}
    assert predict_request(body, "text-embedding-005") == {
        "instances": [{"content": "a"}, {"content": "bb"}],
        "parameters": {"outputDimensionality": 4},
    }
    answer = {
        "predictions": [
            {"embeddings": {"values": [1.0], "statistics": {"token_count": 1}}},
            {"embeddings": {"values": [2.0], "statistics": {"token_count": 2.0}}},
        ]
    }
    out = from_predict_response(answer, "text-embedding-005", "float")
    assert out is not None
    assert [d["embedding"] for d in out["data"]] == [[1.0], [2.0]]
    assert out["usage"] == {"prompt_tokens": 3, "total_tokens": 3}
    assert from_predict_response({"predictions": [{}]}, "e", None) is None


def test_google_auth_is_not_imported_by_a_process_that_serves_no_vertex_call() -> None:
    code = (
        "import sys\n"
        "from gateway.upstream.http import UpstreamHTTP\n"
        "from gateway.upstream.registry import AdapterRegistry\n"
        "AdapterRegistry(UpstreamHTTP())\n"
        "print(sorted(m for m in sys.modules if m.startswith('google')))\n"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "[]"
