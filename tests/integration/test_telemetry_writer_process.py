"""The telemetry writer process's guarantees through ``gateway serve`` (docs/operations.md,
"The telemetry writer"): a SIGTERM to the whole process group right after the calls
loses no row; a writer process killed with SIGKILL during a stream of calls is started
again and every call has exactly one row, the aggregates not doubled; a database cut
(PostgreSQL through a TCP proxy) during calls fails none, and every row arrives once the
database is back; two workers each have a writer process and every call its row."""

from __future__ import annotations

import asyncio
import os
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from sqlalchemy import func, select

from gateway.db.engine import create_engine
from gateway.db.rollup_tables import telemetry_daily, telemetry_hourly
from gateway.db.tables import telemetry, usage_daily
from tests.support.fake_upstream import FakeUpstream
from tests.support.gateway import ENVIRON, TEST_KEY, gateway_yaml
from tests.support.process import Served, free_port, serving
from tests.support.tcp_proxy import TcpProxy
from tests.unit.db.scratch import scratch_database

MESSAGES = [{"role": "user", "content": "Hi"}]
CHILD = "gateway.telemetry.writer_child"
POSTGRES = pytest.param(
    "postgresql",
    marks=pytest.mark.skipif(
        not os.environ.get("GATEWAY_TEST_POSTGRES_URL"),
        reason="GATEWAY_TEST_POSTGRES_URL is not set",
    ),
)


@pytest.fixture(params=["sqlite", POSTGRES])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with scratch_database(request.param, tmp_path, migrated=True) as url:
        yield url


def _config(tmp_path: Path, upstream: FakeUpstream, database_url: str, server: str = "") -> Path:
    yaml = gateway_yaml(upstream.url, database_url).replace(
        "server: {requestTimeoutSeconds: 20}", f"server: {{requestTimeoutSeconds: 20{server}}}"
    )
    config = tmp_path / "config.yaml"
    config.write_text(yaml)
    return config


def _call(base: str) -> str:
    """One chat call on a new connection (any worker may answer); its request id."""
    client = openai.OpenAI(
        base_url=f"{base}/v1",
        api_key=TEST_KEY,
        max_retries=0,
        http_client=httpx.Client(headers={"connection": "close"}, timeout=30),
    )
    with client:
        response = client.chat.completions.with_raw_response.create(model="chat", messages=MESSAGES)
        assert response.parse().choices[0].message.content
        return response.headers["x-request-id"]


def _calls(base: str, count: int, threads: int = 4) -> list[str]:
    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(lambda _: _call(base), range(count)))


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(child) for child in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def _writer_pids(pid: int) -> list[int]:
    """The writer processes under ``pid`` (its children and theirs: workers)."""
    found: list[int] = []
    for child in _children(pid):
        try:
            command = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if CHILD.encode() in command:
            found.append(child)
        else:
            found += _writer_pids(child)
    return found


def _wait_for(predicate: Any, what: str, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _recorded(url: str) -> dict[str, Any]:
    """The request ids of the rows, and the calls the aggregates count."""

    async def read() -> dict[str, Any]:
        engine = create_engine(url)
        try:
            async with engine.connect() as connection:
                ids = (await connection.execute(select(telemetry.c.correlation_id))).scalars()
                requests = select(func.coalesce(func.sum(usage_daily.c.requests), 0))
                hourly = select(func.coalesce(func.sum(telemetry_hourly.c.calls), 0))
                daily = select(func.coalesce(func.sum(telemetry_daily.c.calls), 0))
                return {
                    "ids": list(ids),
                    "usage_daily": int((await connection.execute(requests)).scalar_one()),
                    "hourly": int((await connection.execute(hourly)).scalar_one()),
                    "daily": int((await connection.execute(daily)).scalar_one()),
                }
        finally:
            await engine.dispose()

    return asyncio.run(read())


def _exactly_once(url: str, request_ids: list[str]) -> None:
    recorded = _recorded(url)
    assert sorted(recorded["ids"]) == sorted(request_ids)  # every call, each once
    calls = len(request_ids)
    assert (recorded["usage_daily"], recorded["hourly"], recorded["daily"]) == (calls,) * 3


def _stop_group(served: Served) -> str:
    """SIGTERM to the whole process group (the server, its writer, workers); its output."""
    os.killpg(served.process.pid, signal.SIGTERM)
    served.process.wait(timeout=60)
    return served.stop()


def test_sigterm_to_the_process_group_right_after_the_calls_loses_no_row(
    upstream: FakeUpstream, tmp_path: Path, database_url: str
) -> None:
    port = free_port()
    config = _config(tmp_path, upstream, database_url)
    with serving(config, "--port", str(port), port=port, env=ENVIRON, session=True) as served:
        _wait_for(lambda: _writer_pids(served.process.pid), "no writer process started")
        [writer] = _writer_pids(served.process.pid)
        command = Path(f"/proc/{writer}/cmdline").read_bytes().decode()
        assert database_url not in command and "gateway.db" not in command  # sent on stdin
        request_ids = _calls(served.base, 60)
        output = _stop_group(served)  # the last rows are still queued in the server
    assert served.process.returncode == 0, output  # gateway serve ends 0 on SIGTERM
    assert "rows unwritten" not in output
    _exactly_once(database_url, request_ids)


def test_a_killed_writer_process_is_started_again_and_every_call_has_one_row(
    upstream: FakeUpstream, tmp_path: Path, database_url: str
) -> None:
    port = free_port()
    config = _config(tmp_path, upstream, database_url)
    with serving(config, "--port", str(port), port=port, env=ENVIRON, session=True) as served:
        request_ids: list[str] = []
        done = threading.Event()

        def call_on() -> None:
            while not done.is_set():
                request_ids.extend(_calls(served.base, 8))

        caller = threading.Thread(target=call_on)
        caller.start()
        try:
            for _ in range(2):
                _wait_for(lambda: _writer_pids(served.process.pid), "no writer process")
                [first] = _writer_pids(served.process.pid)
                os.kill(first, signal.SIGSTOP)  # batches are sent to it, none acknowledged
                seen = len(request_ids)
                _wait_for(lambda s=seen: len(request_ids) > s + 30, "the calls stopped")
                time.sleep(0.5)  # past the flush interval: the last of them sent too
                os.kill(first, signal.SIGKILL)
                _wait_for(
                    lambda f=first: _writer_pids(served.process.pid) not in ([], [f]),
                    "the writer process was not started again",
                )
        finally:
            done.set()
            caller.join()
        metrics = httpx.get(f"{served.base}/metrics").text
        output = _stop_group(served)
    assert 'gateway_background_task_restarts_total{task="telemetry-writer-process"} 2.0' in metrics
    assert output.count("telemetry writer process ended (-9)") == 2, output
    assert "with 0 rows unacknowledged" not in output  # each died holding rows
    assert "sk-upstream-secret-42" not in output and database_url not in output
    _exactly_once(database_url, request_ids)


@pytest.mark.skipif(
    not os.environ.get("GATEWAY_TEST_POSTGRES_URL"), reason="GATEWAY_TEST_POSTGRES_URL is not set"
)
def test_a_database_cut_fails_no_call_and_every_row_arrives_once_it_is_back(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    with scratch_database("postgresql", tmp_path, migrated=True) as direct:
        proxy, through = TcpProxy.for_url(direct)
        try:
            port = free_port()
            config = _config(tmp_path, upstream, through)
            with serving(config, "--port", str(port), port=port, env=ENVIRON) as served:
                request_ids = _calls(served.base, 20)
                proxy.down()  # every connection cut, new ones refused
                try:
                    request_ids += _calls(served.base, 40)  # none fails
                    time.sleep(1.0)  # the writer retries meanwhile
                finally:
                    proxy.up()
                _wait_for(
                    lambda: len(_recorded(direct)["ids"]) >= len(request_ids),
                    "the rows did not arrive once the database was back",
                )
                request_ids += _calls(served.base, 10)
                _wait_for(
                    lambda: len(_recorded(direct)["ids"]) >= len(request_ids), "the last rows"
                )
                output = served.stop()
            assert "telemetry: batch write failed, retrying" in output
            assert "telemetry: dropped" not in output
            _exactly_once(direct, request_ids)
        finally:
            proxy.close()


def test_two_workers_each_have_a_writer_process_and_every_call_its_row(
    upstream: FakeUpstream, tmp_path: Path
) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 'gateway.db'}"
    port = free_port()
    config = _config(tmp_path, upstream, url, ", workers: 2")
    with serving(config, "--port", str(port), port=port, env=ENVIRON, session=True) as served:
        request_ids = _calls(served.base, 60)
        _wait_for(lambda: len(_writer_pids(served.process.pid)) == 2, "two writer processes")
        output = _stop_group(served)
    assert served.process.returncode == 0, output  # gateway serve ends 0 on SIGTERM
    _exactly_once(url, request_ids)
