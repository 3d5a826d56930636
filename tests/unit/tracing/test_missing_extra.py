"""telemetry.otel.enabled without the SDK installed: a configuration error that says what to
install, not an ImportError's traceback."""

import builtins
from typing import Any

import pytest

from gateway.config.errors import ConfigError
from gateway.config.loader import load_config_text
from gateway.runtime import Runtime

YAML = """
database: {url: "sqlite+aiosqlite:///:memory:"}
auth: {allowUnauthenticated: true}
telemetry: {otel: {enabled: true}}
providers: [{id: demo, adapter: echo}]
models: [{id: m, provider: demo, capabilities: [chat]}]
configurations: [{id: chat, mode: fixed, model: m}]
"""


def test_enabling_traces_without_the_extra_says_which_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_import = builtins.__import__

    def without_otel(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith(("opentelemetry", "gateway.tracing.otel")):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", without_otel)
    with pytest.raises(ConfigError) as refused:
        Runtime(load_config_text(YAML))
    assert "pip install 'llm-gateway[otel]'" in str(refused.value)
