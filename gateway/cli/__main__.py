"""``python -m gateway.cli``: the ``gateway`` command."""

from gateway.cli import main

if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
