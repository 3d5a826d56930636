"""The ``gateway`` command: serve, db upgrade, check, explain, eval import, keys hash."""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from gateway.config.errors import ConfigError
from gateway.config.keys import hash_key
from gateway.config.loader import check_config, load_config
from gateway.domain.settings import GatewayConfig

log = logging.getLogger("gateway")
CONFIG_ENV = "GATEWAY_CONFIG"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # httpx logs every request at INFO: noise on the hot path, and URLs belong in metrics.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    result: int = handler(args)
    return result


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description=__doc__)
    sub = parser.add_subparsers(dest="command")

    serve = sub.add_parser("serve", help="run the server (migrates the database first)")
    serve.add_argument("--config", required=True)
    serve.set_defaults(handler=_serve)

    check = sub.add_parser("check", help="validate a config file; exit 1 on any problem")
    check.add_argument("--config", required=True)
    check.set_defaults(handler=_check)

    db = sub.add_parser("db", help="database commands")
    db_sub = db.add_subparsers(dest="db_command", required=True)
    upgrade = db_sub.add_parser("upgrade", help="run the migrations")
    upgrade.add_argument("--config", required=True)
    upgrade.set_defaults(handler=_db_upgrade)

    explain = sub.add_parser("explain", help='print the "Why this model?" decision')
    explain.add_argument("configuration")
    explain.add_argument("--operation", required=True)
    explain.add_argument("--mode")
    explain.add_argument("--config", required=True)
    explain.add_argument("--json", action="store_true", help="print the readout's JSON")
    explain.set_defaults(handler=_explain)

    evals = sub.add_parser("eval", help="quality evaluations")
    eval_sub = evals.add_subparsers(dest="eval_command", required=True)
    imp = eval_sub.add_parser("import", help="record eval results from a JSONL file")
    imp.add_argument("file")
    imp.add_argument("--config", required=True)
    imp.set_defaults(handler=_eval_import)

    keys = sub.add_parser("keys", help="gateway keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    hashed = keys_sub.add_parser("hash", help="print the keyHash of a key read from stdin")
    hashed.set_defaults(handler=_keys_hash)
    return parser


def _load(path: str) -> GatewayConfig | None:
    try:
        return load_config(path)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return None


def _check(args: argparse.Namespace) -> int:
    problems = check_config(args.config)
    for problem in problems:
        print(f"{args.config}: {problem}")
    if problems:
        print(f"{len(problems)} problem(s) found.")
        return 1
    print(f"{args.config}: OK")
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    from gateway.db.migrate import upgrade

    upgrade(config.database.url)
    print("database schema is up to date")
    return 0


def _serve(args: argparse.Namespace) -> int:
    config = _load(args.config)
    if config is None:
        return 1
    host = config.server.host
    if not config.auth.keys:
        if not config.auth.allow_unauthenticated:
            print(
                "refusing to start: no gateway key is configured (auth.keys). Add keys, or set "
                "auth.allowUnauthenticated: true to serve without keys on loopback only.",
                file=sys.stderr,
            )
            return 1
        if not _is_loopback(host):
            log.warning("auth.allowUnauthenticated: binding to 127.0.0.1 instead of %s", host)
            host = "127.0.0.1"
    from gateway.db.migrate import upgrade

    upgrade(config.database.url)  # once, before any worker serves
    import uvicorn

    from gateway.api.serving import log_open_file_limit, raise_open_file_limit, uvicorn_options

    log_open_file_limit(raise_open_file_limit(), config.server)  # workers inherit it
    common = {
        "host": host,
        "port": config.server.port,
        "access_log": False,
        "log_level": "info",
        **uvicorn_options(config.server),
    }
    if config.server.workers > 1:
        os.environ[CONFIG_ENV] = str(Path(args.config).resolve())
        os.environ["GATEWAY_BIND_HOST"] = host
        uvicorn.run(
            "gateway.api.factory:app_from_env",
            factory=True,
            workers=config.server.workers,
            **common,
        )
        return 0
    from gateway.api.app import create_app

    uvicorn.run(create_app(config), **common)
    return 0


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


def _keys_hash(_: argparse.Namespace) -> int:
    key = sys.stdin.readline().strip()
    if not key:
        print("no key on standard input", file=sys.stderr)
        return 1
    print(f"sha256:{hash_key(key)}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
