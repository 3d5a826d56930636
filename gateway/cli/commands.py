"""The handlers of the ``gateway`` subcommands other than ``serve``: each loads the
configuration it needs and prints what it did; the heavy imports wait for the command."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from pathlib import Path

from gateway import logs
from gateway.config.advice import config_warnings, describe
from gateway.config.errors import ConfigError
from gateway.config.loader import check_config, load_config
from gateway.domain.keys import hash_key
from gateway.domain.settings import GatewayConfig

_UP_TO_DATE = "database schema is up to date"


def load(path: str) -> GatewayConfig | None:
    try:
        config = load_config(path)
    except ConfigError as error:
        for problem in error.problems:
            print(f"{path}: {problem}", file=sys.stderr)
        return None
    logs.configure(log_format(config))
    return config


def log_format(config: GatewayConfig) -> logs.LogFormat:
    return "json" if config.server.log_format == "json" else "text"


def check(args: argparse.Namespace) -> int:
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


def prices(args: argparse.Namespace) -> int:
    """One line a model: its USD per 1M tokens and its price_source; then the models
    neither the YAML nor the catalog prices."""
    config = load(args.config)
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


def db_upgrade(args: argparse.Namespace) -> int:
    config = load(args.config)
    if config is None:
        return 1
    from gateway.db.migrate import head_revision, revision_title, upgrade

    applied = upgrade(config.database.url)
    for revision in applied:  # in the order they ran
        print(f"applied {revision}: {revision_title(revision)}")
    print(f"database schema is at {head_revision()}" if applied else _UP_TO_DATE)
    return 0


def explain(args: argparse.Namespace) -> int:
    config = load(args.config)
    if config is None:
        return 1
    from gateway.explain_cli import explain_from_database

    return asyncio.run(
        explain_from_database(
            config, args.configuration, args.operation, args.mode, as_json=args.json
        )
    )


def eval_import(args: argparse.Namespace) -> int:
    config = load(args.config)
    if config is None:
        return 1
    from gateway.explain_cli import import_evals

    return asyncio.run(import_evals(config, Path(args.file)))


def eval_run(args: argparse.Namespace) -> int:
    config = load(args.config)
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


def tokenizer_fetch(args: argparse.Namespace) -> int:
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


def keys_hash(_: argparse.Namespace) -> int:
    key = sys.stdin.readline().strip()
    if not key:
        print("no key on standard input", file=sys.stderr)
        return 1
    print(f"sha256:{hash_key(key)}")
    return 0
