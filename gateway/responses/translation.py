"""What a step of the Responses-to-chat translation reports: a refusal (``Unsupported``,
naming the parameter) or a field left out without a counterpart (a ``Note``)."""

from __future__ import annotations

from collections.abc import Callable

from gateway.domain.errors import GatewayException


class Unsupported(GatewayException):
    """A parameter that cannot be translated: answered 400 ``unsupported_parameter``."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param
        self.message = message


Note = Callable[[str], None]
