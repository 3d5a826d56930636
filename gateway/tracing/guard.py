"""A fault in tracing never fails a call: each span method is ``guarded``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

# Faults are logged under the serving side's logger, as before the guard had its module.
log = logging.getLogger("gateway.tracing.otel")
_LOGGED_FAULTS: set[str] = set()


def guarded(method: Callable[..., Any]) -> Callable[..., Any]:
    """A fault in tracing never fails a call: it is logged (once per kind) and ignored."""

    @functools.wraps(method)
    def guarded_method(*args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except Exception as exc:
            kind = type(exc).__name__
            if kind not in _LOGGED_FAULTS:
                _LOGGED_FAULTS.add(kind)
                log.error("tracing failed (%s); the call goes on untraced", kind, exc_info=exc)
            return None

    return guarded_method
