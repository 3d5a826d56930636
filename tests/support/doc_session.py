"""Run a Markdown page's code blocks in order, as a reader following it in one terminal.

Every fenced block runs unless the line right before it is a marker
``<!-- doc-test: not run (reason) -->``:

- ``yaml``: passes ``gateway check`` (with the variables the page names); the page's
  first YAML block is also its ``config.yaml`` from the start, with the providers'
  public URLs mapped to a fake upstream;
- ``sh``: runs in bash in the session's folder, with the variables earlier blocks
  exported; ``gateway`` is the checkout's CLI, except that ``gateway serve`` starts the
  server in the background (on a free port instead of 4000) and returns once it is up,
  as a second terminal would;
- ``python``: runs with the session's variables, ``127.0.0.1:4000`` mapped to that port.

Any other un-marked block has no runner and fails the session.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.process import CHECKOUT, free_port

MARKER = re.compile(r"^<!-- doc-test: not run \((?P<reason>.+)\) -->$")
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```\s*$", re.DOTALL | re.MULTILINE)

_WRAPPER = """#!{python}
import os, subprocess, sys, time, urllib.request

args = sys.argv[1:]
if args[:1] != ["serve"]:
    os.execv(sys.executable, [sys.executable, "-m", "gateway.cli", *args])
port = os.environ["DOC_TEST_PORT"]
with open("serve.log", "a") as log:
    process = subprocess.Popen(
        [sys.executable, "-m", "gateway.cli", *args, "--port", port],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
with open(os.environ["DOC_TEST_PIDS"], "a") as pids:
    pids.write(f"{{process.pid}}\\n")
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    if process.poll() is not None:
        sys.exit(f"gateway serve exited with {{process.returncode}}: see serve.log")
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{{port}}/healthz", timeout=1)
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit("gateway serve did not answer /healthz within 60 s")
"""


@dataclass(frozen=True)
class DocBlock:
    language: str
    body: str
    line: int  # of the opening fence, 1-based
    not_run: str | None  # the marker's reason


def doc_blocks(text: str) -> list[DocBlock]:
    blocks: list[DocBlock] = []
    for match in _FENCE.finditer(text):
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.match(before.strip())
        words = match.group(1).split()
        blocks.append(
            DocBlock(
                language=words[0] if words else "",
                body=match.group(2),
                line=text.count("\n", 0, match.start()) + 1,
                not_run=marker.group("reason") if marker else None,
            )
        )
    return blocks


@dataclass
class Ran:
    block: DocBlock
    returncode: int
    output: str


@dataclass
class DocSession:
    """One page's blocks, run in ``directory`` (which becomes the reader's working folder)."""

    directory: Path
    urls: dict[str, str]  # public URL -> the fake's, in config.yaml
    check_environ: dict[str, str]  # the variables a YAML block's `gateway check` is given
    environ: dict[str, str] = field(default_factory=dict)  # set before the first block
    port: int = field(default_factory=free_port)
    ran: list[Ran] = field(default_factory=list)

    def __post_init__(self) -> None:
        bin_dir = self.directory / ".doc-test-bin"
        bin_dir.mkdir()
        wrapper = bin_dir / "gateway"
        wrapper.write_text(_WRAPPER.format(python=sys.executable))
        wrapper.chmod(0o755)
        self._pids = self.directory / ".doc-test-pids"
        base = {k: v for k, v in os.environ.items() if not k.startswith("GATEWAY_")}
        self._env = {
            **base,
            "PATH": f"{bin_dir}{os.pathsep}{base.get('PATH', '')}",
            "PYTHONPATH": str(CHECKOUT),
            "DOC_TEST_PORT": str(self.port),
            "DOC_TEST_PIDS": str(self._pids),
            **self.environ,
        }

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def run_page(self, text: str) -> list[Ran]:
        """Every un-marked block of the page, in order; stops at the first that fails.
        The page's first YAML block is its ``config.yaml`` from the start (a page may show
        ``gateway check --config config.yaml`` before the file)."""
        blocks = doc_blocks(text)
        first_yaml = next((b for b in blocks if b.language == "yaml" and not b.not_run), None)
        if first_yaml is not None:
            config = first_yaml.body
            for public, fake in self.urls.items():
                config = config.replace(public, fake)
            (self.directory / "config.yaml").write_text(config)
        for block in blocks:
            if block.not_run is not None:
                continue
            ran = self.run(block)
            self.ran.append(ran)
            if ran.returncode != 0:
                break
        return self.ran

    def run(self, block: DocBlock) -> Ran:
        if block.language == "yaml":
            return self._yaml(block)
        if block.language == "sh":
            return self._sh(block)
        if block.language == "python":
            code = block.body.replace("127.0.0.1:4000", f"127.0.0.1:{self.port}")
            return self._process(block, [sys.executable, "-c", code])
        return Ran(block, 1, f"no runner for a ```{block.language} block: mark it not run")

    def _yaml(self, block: DocBlock) -> Ran:
        name = f"block-{block.line}.yaml"
        (self.directory / name).write_text(block.body)
        command = [sys.executable, "-m", "gateway.cli", "check", "--config", name]
        return self._process(block, command, {**self._env, **self.check_environ})

    def _sh(self, block: DocBlock) -> Ran:
        exported = self.directory / ".doc-test-env"
        script = f"set -e\n{block.body}\nenv -0 > {exported}\n"
        ran = self._process(block, ["bash", "-c", script])
        if ran.returncode == 0:  # the variables it exported hold for the next blocks
            pairs = exported.read_bytes().decode().split("\0")
            self._env = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
        return ran

    def _process(
        self, block: DocBlock, command: list[str], env: dict[str, str] | None = None
    ) -> Ran:
        result = subprocess.run(
            command,
            cwd=self.directory,
            env=env or self._env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return Ran(block, result.returncode, result.stdout + result.stderr)

    def served_log(self) -> str:
        log = self.directory / "serve.log"
        return log.read_text() if log.exists() else ""

    def close(self) -> None:
        """Stop the servers the page's ``gateway serve`` started (by their ids)."""
        if not self._pids.exists():
            return
        for line in self._pids.read_text().split():
            try:
                os.kill(int(line), signal.SIGTERM)
            except ProcessLookupError:
                continue
            for _ in range(100):
                try:
                    os.kill(int(line), 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
