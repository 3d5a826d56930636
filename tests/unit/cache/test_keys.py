"""The cache key covers the configuration, the endpoint and the whole body, canonically."""

from __future__ import annotations

from gateway.cache.keys import cache_key
from gateway.domain.model import Endpoint
from gateway.inbound import parse_inbound


def _key(raw: bytes, configuration: str = "chat", endpoint: Endpoint = Endpoint.CHAT) -> str:
    return cache_key(configuration, parse_inbound(endpoint, raw))


BODY = b'{"model": "chat", "temperature": 0, "messages": [{"role": "user", "content": "hi"}]}'


def test_key_order_in_the_body_does_not_change_the_key() -> None:
    reordered = (
        b'{"messages": [{"content": "hi", "role": "user"}], "temperature": 0, "model": "chat"}'
    )
    assert _key(BODY) == _key(reordered)


def test_any_difference_in_the_body_changes_the_key() -> None:
    assert _key(BODY) != _key(BODY.replace(b'"temperature": 0', b'"temperature": 1'))
    assert _key(BODY) != _key(BODY.replace(b'"hi"', b'"hi!"'))


def test_the_configuration_is_part_of_the_key() -> None:
    assert _key(BODY, "chat") != _key(BODY, "other")


def test_a_key_scoped_cache_keeps_one_answer_per_calling_key() -> None:
    request = parse_inbound(Endpoint.CHAT, BODY)
    alice, bob = cache_key("chat", request, "alice"), cache_key("chat", request, "bob")
    assert alice != bob
    assert cache_key("chat", request, "alice") == alice
    shared = cache_key("chat", request)
    assert shared not in (alice, bob)
    assert cache_key("chat", request, "") != shared  # no key is a scope of its own


def test_the_key_is_a_hex_sha256() -> None:
    key = _key(BODY)
    assert len(key) == 64 and int(key, 16) >= 0


FINGERPRINTED = """
auth: {allowUnauthenticated: true}
providers: [{id: p, adapter: openai, baseUrl: "http://127.0.0.1:1/v1", apiKey: "KEY"}]
models:
  - {id: m, provider: p, capabilities: [chat, tools, vision], price: {input: 0.15, output: 0.6}}
  - {id: n, provider: p, capabilities: [chat]}
configurations:
  - {id: fixed, mode: fixed, model: m}
  - {id: routed, mode: criteria, criteria: {capabilities: [chat, tools]}}
"""


def _fingerprints(text: str = FINGERPRINTED) -> dict[str, str]:
    from gateway.cache.keys import configuration_fingerprints
    from gateway.config.loader import load_config_text

    return configuration_fingerprints(load_config_text(text))


def test_editing_what_a_configuration_resolves_to_changes_its_key() -> None:
    before = _fingerprints()
    repriced = _fingerprints(FINGERPRINTED.replace("input: 0.15", "input: 0.20"))
    assert repriced["fixed"] != before["fixed"] and repriced["routed"] != before["routed"]
    renamed = _fingerprints(FINGERPRINTED.replace("{id: n, provider: p,", "{id: n2, provider: p,"))
    assert renamed["fixed"] == before["fixed"]  # n is not what `fixed` resolves to
    assert renamed["routed"] != before["routed"]


def test_the_provider_key_is_not_part_of_the_fingerprint() -> None:
    assert _fingerprints(FINGERPRINTED.replace('"KEY"', '"OTHER"')) == _fingerprints()


def test_fingerprints_agree_across_processes() -> None:
    """Several gateway processes share one cache store: set order must not leak in."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import json, sys; from tests.unit.cache.test_keys import _fingerprints; "
        "print(json.dumps(_fingerprints()))"
    )
    root = Path(__file__).resolve().parents[3]  # where `tests` imports from, whatever the cwd
    # The child starts from this environment less what an earlier test or server may have
    # left in it: nothing of the gateway's or prometheus_client's is read from it.
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("GATEWAY_", "PROMETHEUS_"))}
    seen = set()
    for seed in ("1", "2", "3"):
        child = subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            env={**environ, "PYTHONHASHSEED": seed},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert child.returncode == 0, child.stderr  # the child's traceback, when it fails
        seen.add(json.dumps(json.loads(child.stdout), sort_keys=True))
    assert len(seen) == 1
