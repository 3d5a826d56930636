"""``gateway keys create|list|show|rotate|revoke --config FILE``: the admin API's key writes
from the command line, on the database of the file (docs/operations.md, "Keys and teams at
runtime").

A new key is printed alone on stdout, shown this once; everything else (the key's view,
errors) goes to stderr, or stdout for ``list`` and ``show``. The audit's actor is ``cli``.
With ``redis.url`` a write is published, so running gateways take it at once; without,
they read the change counter within a second.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from gateway.config.errors import ConfigError
from gateway.config.loader import load_config
from gateway.domain.clock import utc_now
from gateway.domain.errors import GatewayError
from gateway.domain.settings import GatewayConfig

if TYPE_CHECKING:  # imported when a command runs: `gateway --help` stays light
    from gateway.governance.admin import Admin

ACTOR = "cli"
Command = Callable[["Admin", argparse.Namespace], Coroutine[Any, Any, int]]


def register(keys_sub: Any, command: Callable[[Any, str, str], argparse.ArgumentParser]) -> None:
    """The five subcommands under ``gateway keys``."""
    create = _with_config(command(keys_sub, "create", "make a key in the database"))
    create.add_argument("--id", help="the key's id (default: generated)")
    create.add_argument("--team", help="the team it belongs to")
    create.add_argument(
        "--configurations", help="comma-separated configurations it may call (default: all)"
    )
    create.add_argument("--expires-at", help="ISO 8601 time with a zone, e.g. 2027-01-01T00:00Z")
    create.add_argument("--metadata", help="a JSON object")
    create.set_defaults(handler=_runner(_create))

    listed = _with_config(command(keys_sub, "list", "list every key (file and database)"))
    listed.add_argument("--team", help="only this team's keys")
    listed.set_defaults(handler=_runner(_list))

    show = _with_config(command(keys_sub, "show", "show one key"))
    show.add_argument("id", help="the key's id")
    show.set_defaults(handler=_runner(_show))

    rotate = _with_config(command(keys_sub, "rotate", "replace a key by a new one"))
    rotate.add_argument("id", help="the id of the key to replace")
    rotate.add_argument(
        "--grace-seconds", type=int, default=0, help="how long the old key keeps working"
    )
    rotate.set_defaults(handler=_runner(_rotate))

    revoke = _with_config(command(keys_sub, "revoke", "revoke a key (its row stays)"))
    revoke.add_argument("id", help="the id of the key to revoke")
    revoke.set_defaults(handler=_runner(_revoke))


def _with_config(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument(
        "--config", required=True, metavar="FILE", help="the gateway's YAML configuration file"
    )
    return parser


def _runner(run: Command) -> Callable[[argparse.Namespace], int]:
    def handler(args: argparse.Namespace) -> int:
        try:
            config = load_config(args.config)
        except ConfigError as error:
            for problem in error.problems:
                print(f"{args.config}: {problem}", file=sys.stderr)
            return 1
        return asyncio.run(_session(config, run, args))

    return handler


async def _session(config: GatewayConfig, run: Command, args: argparse.Namespace) -> int:
    from gateway.db.engine import create_engine
    from gateway.governance.admin import Admin
    from gateway.governance.directory import Directory
    from gateway.governance.store import GovernanceStore

    engine = create_engine(config.database.url)
    redis = None
    if config.redis.url:
        from gateway.db.redis_client import redis_client

        redis = redis_client(config.redis.url)
    try:
        directory = Directory(GovernanceStore(engine), config, redis=redis)
        await directory.refresh()
        return await run(Admin(directory, config), args)
    except GatewayError as error:
        print(f"{error.http_status} {error.code}: {error.message}", file=sys.stderr)
        return 1
    except Exception as error:
        print(f"gateway keys: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    finally:
        if redis is not None:
            await redis.aclose()
        await engine.dispose()


def _print(document: Any, stream: Any = None) -> None:
    print(json.dumps(document, indent=2, sort_keys=True), file=stream or sys.stdout)


async def _create(admin: Admin, args: argparse.Namespace) -> int:
    body: dict[str, Any] = {}
    if args.id:
        body["id"] = args.id
    if args.team:
        body["team"] = args.team
    if args.configurations:
        body["configurations"] = [c.strip() for c in args.configurations.split(",") if c.strip()]
    if args.expires_at:
        body["expiresAt"] = args.expires_at
    if args.metadata:
        try:
            body["metadata"] = json.loads(args.metadata)
        except ValueError:
            print("--metadata must be a JSON object", file=sys.stderr)
            return 1
    from gateway.governance.documents import KeyBody, parse_body

    parsed = parse_body(json.dumps(body).encode(), KeyBody)
    key, view = await admin.create_key(parsed, ACTOR, utc_now())
    print(key)
    _print(view, sys.stderr)
    return 0


async def _list(admin: Admin, args: argparse.Namespace) -> int:
    _print(admin.list_keys(args.team, utc_now()))
    return 0


async def _show(admin: Admin, args: argparse.Namespace) -> int:
    _print(admin.show_key(args.id, utc_now()))
    return 0


async def _rotate(admin: Admin, args: argparse.Namespace) -> int:
    from gateway.governance.documents import RotateBody, parse_body

    body = parse_body(json.dumps({"graceSeconds": args.grace_seconds}).encode(), RotateBody)
    key, view = await admin.rotate_key(args.id, body, ACTOR, utc_now())
    print(key)
    _print(view, sys.stderr)
    return 0


async def _revoke(admin: Admin, args: argparse.Namespace) -> int:
    _print(await admin.revoke_key(args.id, ACTOR, utc_now()))
    return 0
