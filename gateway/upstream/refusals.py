"""What an adapter answers for a call it cannot send, before anything is sent: a 400 the
client reads (``FailureKind.UNTRANSLATABLE``: not retried, no fallback, the provider's
health and circuit untouched; the row records the provider it would have gone to).
"""

from __future__ import annotations

import msgspec

from gateway.domain.errors import TranslationError, UpstreamError, as_gateway_error, envelope
from gateway.domain.failures import FailureKind

_ENCODER = msgspec.json.Encoder()


def refused_translation(exc: TranslationError) -> UpstreamError:
    """The request cannot be expressed for the provider: 400 ``invalid_request`` naming
    the field."""
    refusal = as_gateway_error(exc).envelope()
    return UpstreamError(
        FailureKind.UNTRANSLATABLE, exc.message, status=400, body=_ENCODER.encode(refusal)
    )


def not_offered(adapter: str, message: str) -> UpstreamError:
    """The provider offers no such operation: 400 ``unsupported_operation`` saying so."""
    refusal = envelope(400, message, code="unsupported_operation")
    return UpstreamError(
        FailureKind.UNTRANSLATABLE,
        f"operation not offered by {adapter}",
        status=400,
        body=_ENCODER.encode(refusal),
    )


def untranslatable(message: str, param: str | None) -> UpstreamError:
    """A field this route cannot translate: 400 ``unsupported_parameter`` naming it."""
    refusal = envelope(400, message, "unsupported_parameter", param)
    return UpstreamError(
        FailureKind.UNTRANSLATABLE, message, status=400, body=_ENCODER.encode(refusal)
    )
