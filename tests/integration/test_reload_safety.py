"""A reload never installs a file caught half-written (docs/operations.md, "Reloading the
configuration"): after SIGHUP the file is taken only once it reads the same twice across
the debounce, and a file that would leave no configuration is refused and logged while
the running one keeps serving. A real `gateway serve` process."""

from __future__ import annotations

import hashlib
import signal
import time
from collections.abc import Callable
from pathlib import Path

import openai

from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ADMIN_KEY, ENVIRON, TEST_KEY, gateway_yaml
from tests.support.process import Served, admin_version, free_port, serving

LATER = "  - {id: later, mode: fixed, model: small}\n"


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _wait_for(check: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("timed out")


def _answers(served: Served, configuration: str) -> bool:
    client = openai.OpenAI(base_url=f"{served.base}/v1", api_key=TEST_KEY, max_retries=0)
    try:
        client.chat.completions.create(
            model=configuration, messages=[{"role": "user", "content": "Hi"}]
        )
    except openai.NotFoundError:
        return False
    return True


def test_sighup_on_a_half_written_file_installs_only_the_whole_one(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.yaml"
    base = gateway_yaml(upstream.url, f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}")
    config.write_text(base)
    whole = "# version 2\n" + base + LATER  # the new file: one configuration more at its end
    with serving(config, "--port", str(port := free_port()), port=port, env=ENVIRON) as served:
        assert admin_version(served, ADMIN_KEY)["generation"] == 1
        # A copy caught midway: everything but its last line, itself a valid file.
        config.write_text(whole[: whole.index(LATER)])
        served.process.send_signal(signal.SIGHUP)
        time.sleep(0.1)  # the rest arrives well inside the 0.5 s debounce
        config.write_text(whole)
        _wait_for(lambda: admin_version(served, ADMIN_KEY)["hash"] == _digest(whole))
        # The whole file is the only one installed: the prefix never was.
        assert admin_version(served, ADMIN_KEY)["generation"] == 2
        assert _answers(served, "later")


def test_a_file_with_no_configuration_is_refused_and_the_old_one_keeps_serving(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    config = tmp_path / "gateway.yaml"
    base = gateway_yaml(upstream.url, f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}")
    base = base.replace(", configurations: [chat]", "")  # no key names a configuration
    config.write_text(base)
    with serving(config, "--port", str(port := free_port()), port=port, env=ENVIRON) as served:
        before = admin_version(served, ADMIN_KEY)
        # `head` of the file: providers, models and keys, but the configurations cut off.
        config.write_text(base[: base.index("\nconfigurations:\n")])
        served.process.send_signal(signal.SIGHUP)
        time.sleep(3)  # time to take it (here: to refuse it) several times over
        assert admin_version(served, ADMIN_KEY) == before
        assert _answers(served, "chat")
        log = served.stop()
    assert "refused; the running configuration (" + before["hash"] + ") stays" in log, log
    assert "configurations: no configuration is configured" in log, log
