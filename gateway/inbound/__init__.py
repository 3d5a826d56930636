"""Parsing an inbound request: what the gateway reads, checked before anything else runs.

``request`` parses the body into an ``InboundRequest``; ``shapes`` declares the type of every
field the gateway (or a translation) reads, so a type-confused body is a 400 naming the
parameter, never an exception inside a translation.
"""

from gateway.inbound.request import (
    MAX_CHOICES,
    MAX_JSON_DEPTH,
    MAX_TOKENS_BOUND,
    InboundRequest,
    nests_deeper,
    parse_inbound,
    refused_request,
)

__all__ = [
    "MAX_CHOICES",
    "MAX_JSON_DEPTH",
    "MAX_TOKENS_BOUND",
    "InboundRequest",
    "nests_deeper",
    "parse_inbound",
    "refused_request",
]
