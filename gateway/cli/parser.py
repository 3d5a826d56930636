"""The ``gateway`` command's arguments: every subcommand, its help and its handler."""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path
from typing import Any

from gateway import __version__, keys_cli
from gateway.cli import commands
from gateway.cli import serve as serving
from gateway.domain.model import Operation, PolicyMode


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


def command_parser() -> argparse.ArgumentParser:
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
    serve.set_defaults(handler=serving.serve)

    check = _command(sub, "check", "validate a config file; exit 1 on any problem")
    _config_option(check)
    check.set_defaults(handler=commands.check)

    prices = _command(
        sub, "prices", "print each model's price and where it came from (YAML or catalog)"
    )
    _config_option(prices)
    prices.set_defaults(handler=commands.prices)

    db = _command(sub, "db", "database commands")
    db_sub = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = _command(db_sub, "upgrade", "run the migrations")
    _config_option(upgrade)
    upgrade.set_defaults(handler=commands.db_upgrade)

    _explain_parser(sub)
    _eval_parser(sub)
    _tokenizer_parser(sub)

    keys = _command(sub, "keys", "gateway keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True, metavar="COMMAND")
    hashed = _command(keys_sub, "hash", "print the keyHash of a key read from stdin")
    hashed.set_defaults(handler=commands.keys_hash)
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
    explain.set_defaults(handler=commands.explain)


def _eval_parser(sub: Any) -> None:
    evals = _command(sub, "eval", "quality evaluations")
    eval_sub = evals.add_subparsers(dest="eval_command", required=True, metavar="COMMAND")
    imp = _command(eval_sub, "import", "record eval results from a JSONL file")
    imp.add_argument("file", help="one JSON object a line (see the README)")
    _config_option(imp)
    imp.set_defaults(handler=commands.eval_import)
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
    run.set_defaults(handler=commands.eval_run)


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
    fetch.set_defaults(handler=commands.tokenizer_fetch)
