"""The ``gateway`` command: serve, db upgrade, check, prices, explain, eval import, eval run,
tokenizer fetch, keys hash."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import logging
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from gateway import __version__, allocator, keys_cli, logs
from gateway.config.advice import config_warnings, describe
from gateway.config.errors import ConfigError
from gateway.config.loader import check_config, load_config, load_config_file
from gateway.domain.keys import hash_key
from gateway.domain.model import Operation, PolicyMode
from gateway.domain.settings import GatewayConfig

log = logging.getLogger("gateway")
CONFIG_ENV = "GATEWAY_CONFIG"
MULTIPROCESS_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client's multiprocess mode
_UP_TO_DATE = "database schema is up to date"
NO_KEY = (
    "refusing to start: no gateway key is configured. Either add keys under auth.keys, "
    'e.g. `keys: [{id: alice, key: "${ALICE_KEY}"}]` (or a keyHash that '
    '`echo -n "$KEY" | gateway keys hash` prints), or set auth.adminKey and make keys at '
    "runtime (`gateway keys create`, POST /admin/keys), or set "
    "`auth.allowUnauthenticated: true` to serve without keys, on 127.0.0.1 only."
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logs.configure("text")  # until a config file says otherwise
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    result: int = handler(args)
    return result


def _version() -> str:
    try:
        return metadata.version("llm-gateway")
    except metadata.PackageNotFoundError:  # run from a checkout without installing
        return __version__


def _command(sub: Any, name: str, text: str) -> argparse.ArgumentParser:
    command: argparse.ArgumentParser = sub.add_parser(name, help=text, description=text)
    return command


def _config_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="the gateway's YAML configuration file"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gateway",
        description="An OpenAI-compatible LLM gateway: route, forward, price and record calls.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    serve = _command(sub, "serve", "run the server (migrates the database first)")
    _config_option(serve)
    serve.add_argument("--host", help="address to bind, instead of the config's server.host")
    serve.add_argument(
        "--port", type=int, help="port to listen on, instead of the config's server.port"
    )
    serve.set_defaults(handler=_serve)

    check = _command(sub, "check", "validate a config file; exit 1 on any problem")
    _config_option(check)
    check.set_defaults(handler=_check)

    prices = _command(
        sub, "prices", "print each model's price and where it came from (YAML or catalog)"
    )
    _config_option(prices)
    prices.set_defaults(handler=_prices)

    db = _command(sub, "db", "database commands")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = _command(db_sub, "upgrade", "run the migrations")
    _config_option(upgrade)
    upgrade.set_defaults(handler=_db_upgrade)

    _explain_parser(sub)
    _eval_parser(sub)
    _tokenizer_parser(sub)

    keys = _command(sub, "keys", "gateway keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True, metavar="COMMAND")
    hashed = _command(keys_sub, "hash", "print the keyHash of a key read from stdin")
    hashed.set_defaults(handler=_keys_hash)
    keys_cli.register(keys_sub, _command)  # create, list, show, rotate, revoke
    return parser


def _explain_parser(sub: Any) -> None:
    explain = _command(sub, "explain", 'print the "Why this model?" decision')
    explain.add_argument("configuration", help="the configuration id clients name in `model`")
    explain.add_argument(
        "--operation",
        required=True,
        help="the kind of call to decide for: " + ", ".join(o.value for o in Operation),
    )
    explain.add_argument(
        "--mode",
        help="decide with this policy mode instead of the configured one: "
        + ", ".join(m.value for m in PolicyMode),
    )
    _config_option(explain)
    explain.add_argument("--json", action="store_true", help="print the readout's JSON")
    explain.set_defaults(handler=_explain)


def _eval_parser(sub: Any) -> None:
    evals = _command(sub, "eval", "quality evaluations")
    eval_sub = evals.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")
    imp = _command(eval_sub, "import", "record eval results from a JSONL file")
    imp.add_argument("file", help="one JSON object a line (see the README)")
    _config_option(imp)
    imp.set_defaults(handler=_eval_import)
    run = _command(eval_sub, "run", "run an eval suite through the gateway and record its scores")
    run.add_argument("suite", help="the suite: one case a line (see docs/routing.md)")
    target = run.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--configuration", metavar="ID", help="send every case to this configuration"
    )
    target.add_argument(
        "--model",
        metavar="ID",
        action="append",
        help="run the suite on this model (repeat for several): each is a run of its own",
    )
    run.add_argument("--set", metavar="ID", help="the eval set's id (default: the file's name)")
    run.add_argument(
        "--concurrency", type=int, default=4, metavar="N", help="cases in flight at once (4)"
    )
    _config_option(run)
    run.set_defaults(handler=_eval_run)


def _tokenizer_parser(sub: Any) -> None:
    tokenizer = _command(sub, "tokenizer", "tiktoken's encoding files")
    tok_sub = tokenizer.add_subparsers(dest="tokenizer_command", required=True, metavar="COMMAND")
    fetch = _command(
        tok_sub, "fetch", "download the encodings once, for machines that count tokens offline"
    )
    fetch.add_argument(
        "--dir",
        type=Path,
        help="folder to keep them in (default: TIKTOKEN_CACHE_DIR, else tiktoken's own cache)",
    )
    fetch.add_argument(
        "--mirror",
        metavar="URL",
        help="download NAME.tiktoken from this base URL instead of OpenAI's",
    )
    fetch.set_defaults(handler=_tokenizer_fetch)


def _load(path: str) -> GatewayConfig | None:
    try:
        config = load_config(path)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return None
    logs.configure(_log_format(config))
    return config


def _log_format(config: GatewayConfig) -> logs.LogFormat:
    return "json" if config.server.log_format == "json" else "text"


def _check(args: argparse.Namespace) -> int:
    problems = check_config(args.config)
    for problem in problems:
        print(f"{args.config}: {problem}")
    if problems:
        print(f"{len(problems)} problem(s) found.")
        return 1
    for warning in config_warnings(load_config(args.config)):
        print(f"{args.config}: warning: {warning}")
    print(f"{args.config}: OK")
    return 0


def _prices(args: argparse.Namespace) -> int:
    """One line a model: its USD per 1M tokens and its price_source; then the models
    neither the YAML nor the catalog prices."""
    config = _load(args.config)
    if config is None:
        return 1
    unknown: list[str] = []
    for model in config.models:
        price = model.price
        if price is None:
            unknown.append(model.id)
            continue
        print(f"{model.id}: {describe(price)} ({model.price_source})")
    if unknown:
        print("not in the catalog (unpriced): " + ", ".join(unknown))
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    from gateway.db.migrate import head_revision, revision_title, upgrade

    applied = upgrade(config.database.url)
    for revision in applied:  # in the order they ran
        print(f"applied {revision}: {revision_title(revision)}")
    print(f"database schema is at {head_revision()}" if applied else _UP_TO_DATE)
    return 0


def _serve(args: argparse.Namespace) -> int:
    allocator.limit_arenas()  # before the server's threads allocate
    try:
        loaded = load_config_file(args.config)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{args.config}: {problem}", file=sys.stderr)
        return 1
    config = loaded.config
    access_log = config.server.access_log
    logs.configure(_log_format(config), access_log=access_log)
    host = args.host or config.server.host
    port = config.server.port if args.port is None else args.port
    # With auth.adminKey, keys may be made at runtime (/admin/keys, gateway keys create).
    auth = config.auth
    if not auth.keys and (auth.allow_unauthenticated or auth.admin_key_hash is None):
        if not config.auth.allow_unauthenticated:
            print(NO_KEY, file=sys.stderr)
            return 1
        if not _is_loopback(host):
            log.warning("auth.allowUnauthenticated: binding to 127.0.0.1 instead of %s", host)
            host = "127.0.0.1"
    if not _upgrade_in_a_child(args.config):  # once, before any worker serves
        return 1
    import uvicorn

    from gateway.api.serving import (
        exit_cleanly_on_sigterm,
        log_open_file_limit,
        raise_open_file_limit,
        uvicorn_options,
    )

    log_open_file_limit(raise_open_file_limit(), config.server)  # workers inherit it
    # uvicorn applies the same logging config in every worker it starts; its own access
    # log is off (the gateway writes one line per call, with what the call did, unless
    # server.accessLog is false).
    common = {
        "host": host,
        "port": port,
        "access_log": False,
        "log_config": logs.logging_config(_log_format(config), access_log=access_log),
        **uvicorn_options(config.server),
    }
    config_file = Path(args.config).resolve()
    if config.server.workers > 1:
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
    if os.environ.get(MULTIPROCESS_ENV):
        _empty_metrics_directory(Path(os.environ[MULTIPROCESS_ENV]))
    from gateway.api.app import create_app

    app = create_app(config, config_file=config_file, digest=loaded.digest, settle_collector=True)
    exit_cleanly_on_sigterm()  # what uvicorn re-raises SIGTERM into after its shutdown
    uvicorn.run(app, **common)
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


def _explain(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    from gateway.explain_cli import explain_from_database

    return asyncio.run(
        explain_from_database(
            config, args.configuration, args.operation, args.mode, as_json=args.json
        )
    )


def _eval_import(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    from gateway.explain_cli import import_evals

    return asyncio.run(import_evals(config, Path(args.file)))


def _eval_run(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    from gateway.evals.command import run_eval

    return asyncio.run(
        run_eval(
            config,
            Path(args.suite),
            configuration=args.configuration,
            models=args.model or [],
            set_id=args.set,
            concurrency=args.concurrency,
        )
    )


def _tokenizer_fetch(args: argparse.Namespace) -> int:
    from gateway.usage.download import fetch_encodings, missing_encodings, offline_steps
    from gateway.usage.tokens import tiktoken_cache_dir

    chosen = args.dir or tiktoken_cache_dir()
    if chosen is None:
        print("TIKTOKEN_CACHE_DIR is empty: pass --dir", file=sys.stderr)
        return 1
    directory = Path(chosen)
    try:
        fetched = fetch_encodings(directory, mirror=args.mirror)
    except (OSError, ValueError) as error:
        print(f"error: could not fetch tiktoken's encodings: {error}", file=sys.stderr)
        for line in offline_steps(directory, missing_encodings(directory)):
            print(line, file=sys.stderr)
        return 1
    for item in fetched:
        state = "downloaded" if item.downloaded else "already there"
        print(f"{item.encoding}: {state} ({item.path})")
    if os.environ.get("TIKTOKEN_CACHE_DIR") != str(directory):
        print(f"export TIKTOKEN_CACHE_DIR={directory.resolve()}  # for gateway serve")
    return 0


def _keys_hash(_: argparse.Namespace) -> int:
    key = sys.stdin.readline().strip()
    if not key:
        print("no key on standard input", file=sys.stderr)
        return 1
    print(f"sha256:{hash_key(key)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
