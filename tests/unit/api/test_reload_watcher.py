"""The config watcher against a stand-in runtime: debounced edits are taken once, an edit
that leaves the bytes as served is not, an invalid file is logged with its YAML paths and
changes nothing (and is not logged again until it changes)."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from gateway.api.reload import ConfigWatcher
from gateway.config.loader import load_config_file
from gateway.domain.settings import GatewayConfig
from gateway.runtime import ConfigVersion
from gateway.tasks import Supervisor

VALID = """
auth: {{keys: [{{id: a, key: sk-aaaaaaaaaaaaaaaa}}]}}
providers: [{{id: demo, adapter: echo}}]
models: [{{id: m1, provider: demo}}]
configurations: [{{id: c, mode: fixed, model: m1}}]
routing: {{callHistory: {history}}}
"""


class StandIn:
    """What the watcher reads of a Runtime, recording each reload."""

    def __init__(self, config: GatewayConfig, digest: str) -> None:
        self.serving: Any = _Serving(config, ConfigVersion(digest, datetime.now(UTC)))
        self.reloads: list[GatewayConfig] = []
        self.tasks = Supervisor()

    @property
    def version(self) -> ConfigVersion:
        version: ConfigVersion = self.serving.version
        return version

    async def reload(self, config: GatewayConfig, digest: str | None) -> Any:
        self.reloads.append(config)
        version = ConfigVersion(digest, datetime.now(UTC), self.version.generation + 1)
        self.serving = _Serving(config, version)
        return self.serving


class _Serving:
    def __init__(self, config: GatewayConfig, version: ConfigVersion) -> None:
        self.config = config
        self.version = version


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "gateway.yaml"
    path.write_text(VALID.format(history="false"))
    return path


def _write(path: Path, text: str) -> None:
    path.write_text(text)


async def _eventually(check: Any, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if check():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("timed out")


async def _watching(path: Path) -> tuple[StandIn, ConfigWatcher]:
    loaded = load_config_file(path)
    runtime = StandIn(loaded.config, loaded.digest)
    watcher = ConfigWatcher(runtime, path, poll_seconds=0.02, debounce_seconds=0.5)  # type: ignore[arg-type]
    await watcher.start()
    return runtime, watcher


async def test_an_edit_in_several_writes_is_taken_once_when_it_holds_still(
    config_file: Path,
) -> None:
    runtime, watcher = await _watching(config_file)
    try:
        for step in range(5):  # a slow editor: five writes 50 ms apart
            _write(config_file, VALID.format(history="true") + f"# {step}\n")
            await asyncio.sleep(0.05)
        await _eventually(lambda: runtime.reloads)
        await asyncio.sleep(1.0)  # time for a second reload, if one were coming
        assert len(runtime.reloads) == 1
        assert runtime.reloads[0].routing.call_history is True
        assert runtime.version.generation == 2
        assert runtime.version.digest == load_config_file(config_file).digest
    finally:
        await watcher.stop()


async def test_a_touch_or_the_same_bytes_again_reload_nothing(config_file: Path) -> None:
    runtime, watcher = await _watching(config_file)
    try:
        _write(config_file, VALID.format(history="false"))
        await asyncio.sleep(1.5)
        assert runtime.reloads == []
        assert await watcher.reload("SIGHUP") is False  # signalled, but unchanged
        assert runtime.reloads == []
    finally:
        await watcher.stop()


async def test_an_invalid_file_changes_nothing_and_logs_every_problem_once(
    config_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runtime, watcher = await _watching(config_file)
    caplog.set_level(logging.ERROR, logger="gateway.reload")
    try:
        bad = VALID.format(history="maybe").replace("model: m1}]", "model: ghost}]")
        _write(config_file, bad)
        await _eventually(lambda: any("problem(s)" in r.getMessage() for r in caplog.records))
        assert runtime.reloads == []
        problems = [r.getMessage() for r in caplog.records]
        assert any(m.startswith(f"{config_file}: routing.callHistory: ") for m in problems)
        assert any(m.startswith(f"{config_file}: configurations[0].model: ") for m in problems)
        assert sum("has 2 problem(s)" in m for m in problems) == 1
        _write(config_file, bad)  # the same bytes again: not logged again
        await asyncio.sleep(1.5)
        assert sum("has 2 problem(s)" in r.getMessage() for r in caplog.records) == 1
        assert await watcher.reload("SIGHUP") is False  # a signal checks it again, and says so
        assert sum("has 2 problem(s)" in r.getMessage() for r in caplog.records) == 2
        _write(config_file, VALID.format(history="true"))
        await _eventually(lambda: runtime.reloads)
        assert runtime.reloads[0].routing.call_history is True
    finally:
        await watcher.stop()
