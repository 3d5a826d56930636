"""``gateway serve``: the configuration checked, the database migrated (in a child
process), then uvicorn run, in one process or ``server.workers`` of them."""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gateway import allocator, logs
from gateway.cli.commands import log_format
from gateway.config.errors import ConfigError
from gateway.config.loader import LoadedFile, load_config_file
from gateway.domain.settings import GatewayConfig

log = logging.getLogger("gateway")
CONFIG_ENV = "GATEWAY_CONFIG"
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's multiprocess mode
NO_KEY = (
    "refusing to start: no gateway key is configured. Either add keys under auth.keys, "
    'e.g. `keys: [{id: alice, key: "${ALICE_KEY}"}]` (or a keyHash that '
    '`echo -n "$KEY" | gateway keys hash` prints), or set auth.adminKey and make keys at '
    "runtime (`gateway keys create`, POST /admin/keys), or set "
    "`auth.allowUnauthenticated: true` to serve without keys, on 127.0.0.1 only."
)


def serve(args: argparse.Namespace) -> int:
    allocator.limit_arenas()  # before the server's threads allocate
    try:
        loaded = load_config_file(args.config)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{args.config}: {problem}", file=sys.stderr)
        return 1
    config = loaded.config
    access_log = config.server.access_log
    logs.configure(log_format(config), access_log=access_log)
    host = _bind_host(config, args.host or config.server.host)
    if host is None:
        return 1
    port = config.server.port if args.port is None else args.port
    if not _upgrade_in_a_child(args.config):  # once, before any worker serves
        return 1
    return _run_server(loaded, args.config, host, port)


def _bind_host(config: GatewayConfig, host: str) -> str | None:
    """The address to bind: None (refused, said why) when no key is configured and
    unauthenticated serving is not allowed; 127.0.0.1 when it is."""
    # With auth.adminKey, keys may be made at runtime (/admin/keys, gateway keys create).
    auth = config.auth
    if not auth.keys and (auth.allow_unauthenticated or auth.admin_key_hash is None):
        if not config.auth.allow_unauthenticated:
            print(NO_KEY, file=sys.stderr)
            return None
        if not _is_loopback(host):
            log.warning("auth.allowUnauthenticated: binding to 127.0.0.1 instead of %s", host)
            host = "127.0.0.1"
    return host


def _run_server(loaded: LoadedFile, config_path: str, host: str, port: int) -> int:
    import uvicorn

    from gateway.api.serving import (
        exit_cleanly_on_sigterm,
        log_open_file_limit,
        raise_open_file_limit,
        uvicorn_options,
    )

    config = loaded.config
    access_log = config.server.access_log
    log_open_file_limit(raise_open_file_limit(), config.server)  # workers inherit it
    # uvicorn applies the same logging config in every worker it starts; its own access
    # log is off (the gateway writes one line per call, with what the call did, unless
    # server.accessLog is false).
    common = {
        "host": host,
        "port": port,
        "access_log": False,
        "log_config": logs.logging_config(log_format(config), access_log=access_log),
        **uvicorn_options(config.server),
    }
    config_file = Path(config_path).resolve()
    if config.server.workers > 1:
        return _run_workers(config, config_file, common)
    if os.environ.get(MULTIPROCESS_ENV):
        _empty_metrics_directory(Path(os.environ[MULTIPROCESS_ENV]))
    from gateway.api.app import create_app

    app = create_app(config, config_file=config_file, digest=loaded.digest, settle_collector=True)
    exit_cleanly_on_sigterm()  # what uvicorn re-raises SIGTERM into after its shutdown
    uvicorn.run(app, **common)
    return 0


def _run_workers(config: GatewayConfig, config_file: Path, common: dict[str, Any]) -> int:
    """``server.workers`` processes, each building its app from the file (CONFIG_ENV)."""
    from gateway.api.workers import run_workers

    os.environ[CONFIG_ENV] = str(config_file)
    with _metrics_directory():  # /metrics then sums every worker's metrics
        if config.redis.url is None:
            log.info(
                "server.workers: %d without redis.url: each worker keeps its own circuits "
                "and signal snapshots",
                config.server.workers,
            )
        run_workers(
            "gateway.api.factory:app_from_env",
            factory=True,
            workers=config.server.workers,
            **common,
        )
    return 0


@contextlib.contextmanager
def _metrics_directory() -> Iterator[None]:
    """Prometheus multiprocess mode for the workers about to start: the folder that
    ``PROMETHEUS_MULTIPROC_DIR`` names, emptied of an earlier run's files, else a fresh
    temporary one, removed when the server stops. Set before any worker imports
    prometheus_client, which reads it then."""
    named = os.environ.get(MULTIPROCESS_ENV)
    if named:
        _empty_metrics_directory(Path(named))
        yield
        return
    directory = tempfile.mkdtemp(prefix="gateway-metrics-")
    os.environ[MULTIPROCESS_ENV] = directory
    try:
        yield
    finally:
        del os.environ[MULTIPROCESS_ENV]
        shutil.rmtree(directory, ignore_errors=True)


def _empty_metrics_directory(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):  # an earlier run's values would be added in
        stale.unlink(missing_ok=True)


def _upgrade_in_a_child(config_path: str) -> bool:
    """``gateway db upgrade`` in a child process: Alembic and the migration scripts are
    then never loaded into the serving process (about 10 MB of its resident memory).
    Its log lines go to stderr in the configured format; its closing remark on stdout is
    dropped, so a server's output stays its log lines alone."""
    command = [sys.executable, "-m", "gateway.cli", "db", "upgrade", "--config", config_path]
    return subprocess.run(command, check=False, stdout=subprocess.DEVNULL).returncode == 0


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
