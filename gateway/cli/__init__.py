"""The ``gateway`` command: serve, db upgrade, check, prices, explain, eval import, eval run,
tokenizer fetch, keys hash.

The argument tree is in gateway/cli/parser.py, ``serve`` in serve.py, every other
command in commands.py; ``python -m gateway.cli`` runs __main__.py.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway import logs
from gateway.cli.parser import command_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = command_parser()
    args = parser.parse_args(argv)
    logs.configure("text")  # until a config file says otherwise
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    result: int = handler(args)
    return result
