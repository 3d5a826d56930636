"""Every exception the gateway defines is in the one error tree (gateway/domain/errors/):
a ``GatewayException``, drawn in the tree the module's docstring shows."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import re

import gateway
from gateway.domain import errors
from gateway.domain.errors import GatewayException


def _defined_exceptions() -> dict[str, type[BaseException]]:
    found: dict[str, type[BaseException]] = {}
    for info in pkgutil.walk_packages(gateway.__path__, "gateway."):
        module = importlib.import_module(info.name)
        for name, obj in inspect.getmembers(module, inspect.isclass):
            if issubclass(obj, BaseException) and obj.__module__ == info.name:
                found[f"{info.name}.{name}"] = obj
    return found


def test_the_walk_finds_exceptions_of_several_packages() -> None:
    found = _defined_exceptions()
    assert "gateway.config.errors.ConfigError" in found
    assert "gateway.domain.errors.upstream.UpstreamError" in found
    assert "gateway.budgets.store.Refused" in found


def test_every_exception_the_gateway_defines_is_a_gateway_exception() -> None:
    outside = sorted(
        name for name, cls in _defined_exceptions().items() if not issubclass(cls, GatewayException)
    )
    assert not outside, f"not in the error tree: {outside}"


def test_every_exception_is_drawn_in_the_tree() -> None:
    tree = errors.__doc__ or ""
    undrawn = sorted(
        name
        for name, cls in _defined_exceptions().items()
        if not cls.__name__.startswith("_") and not re.search(rf"\b{cls.__name__}\b", tree)
    )
    assert not undrawn, f"missing from the tree in gateway/domain/errors/: {undrawn}"
