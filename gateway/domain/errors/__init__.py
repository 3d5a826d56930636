"""The gateway's one error tree, its one envelope and its one exception-to-answer mapper.

Every exception the gateway raises on purpose is a ``GatewayException``:

GatewayException
├── ConfigError             the configuration is invalid (gateway/config/errors.py): startup
│                           and CLI only, never an answer
├── TranslationError        a request the Anthropic translation cannot express; the adapter
│                           relays it as an upstream 400 ``invalid_request`` with ``param``
├── Unsupported             a /v1/responses parameter the translation to chat cannot express
│                           (gateway/responses/translation.py): relayed as an upstream 400
│                           ``unsupported_parameter``
├── Untranslatable          a /v1/messages parameter the translation to chat cannot express
│                           (gateway/messages/request.py): relayed as an upstream 400
│                           ``unsupported_parameter``, in Anthropic's envelope
├── MigrationLockTimeout    another process held the migration lock past the wait
│                           (gateway/db/migrate_lock.py): startup and CLI only
├── UpstreamError           one upstream call failed, classified by ``kind`` (FailureKind);
│                           never answered as such: retried, fallen back from, then answered
│                           by ``exhausted`` (one of the 429/502/504 below)
├── UpstreamRejected        a non-retryable upstream answer (a 4xx other than 401/403/408/429):
│                           relayed with its own status and (redacted) body
├── Refused                 a budget line would be passed (gateway/budgets/store.py): the
│                           budget gate answers it as BudgetExceeded
├── SettleUncertain         a budget settlement may or may not have committed (budgets/store.py):
│                           the gate keeps it for recovery, never an answer
├── EventTooLarge           an SSE event past its cap (gateway/streaming/sse.py): the adapter
│   │                       raises UpstreamError(oversize), the relay ends the stream
│   └── FrameTooLarge       an AWS event-stream frame past it (gateway/upstream/bedrock/events.py)
├── BadFrame                an AWS event-stream frame botocore cannot decode (a CRC, a length):
│                           the Bedrock adapter raises UpstreamError(invalid_response)
├── UndecodableBody         an upstream error body in an encoding not undone
│                           (gateway/upstream/error_body.py): described, never raised further
├── EvalImportError         eval results that cannot be imported (gateway/signals/quality.py):
│                           the CLI prints each problem
├── SuiteError              an eval suite that cannot be run (gateway/evals/suite.py): the
│                           CLI prints each problem
└── GatewayError            an answer: HTTP status, OpenAI type and code
    ├── InvalidRequest          400 invalid_request_error  invalid_request
    │   └── InvalidJson         400 invalid_request_error  invalid_json
    ├── NoEligibleModel         400 / 503                   no_eligible_model
    ├── AuthenticationFailed    401 authentication_error    invalid_api_key
    ├── ConfigurationNotAllowed 403 permission_error        configuration_not_allowed
    ├── CrossSiteRequest        403 permission_error        cross_site_request
    ├── ModelNotFound           404 invalid_request_error   model_not_found
    ├── NotFound                404 invalid_request_error   not_found
    ├── MethodNotAllowed        405 invalid_request_error   method_not_allowed
    ├── Conflict                409 invalid_request_error   conflict (admin writes)
    │   ├── KeyFromFile         409 invalid_request_error   key_from_file
    │   ├── TeamFromFile        409 invalid_request_error   team_from_file
    │   ├── TeamHasKeys         409 invalid_request_error   team_has_keys
    │   └── AlreadyExists       409 invalid_request_error   already_exists
    ├── RequestHeadTimedOut     408 invalid_request_error   request_timeout
    ├── RequestTooLarge         413 invalid_request_error   request_too_large
    ├── UnsupportedMediaType    415 invalid_request_error   unsupported_media_type
    ├── HostNotAllowed          421 invalid_request_error   host_not_allowed
    ├── BudgetExceeded          429 rate_limit_error        budget_exceeded
    ├── RateLimited             429 rate_limit_error        rate_limited
    ├── RateLimitExceeded       429 rate_limit_error        rate_limit_exceeded
    ├── RequestHeadTooLarge     431 invalid_request_error   request_header_too_large
    ├── InternalError           500 api_error               internal_error
    ├── BudgetCheckFailed       500 api_error               internal_error
    ├── UpstreamFailed          502 api_error               upstream_error
    │   └── InvalidUpstreamResponse 502 api_error           invalid_upstream_response
    ├── UpstreamAuthFailed      502 api_error               upstream_auth_failed
    ├── BudgetUnavailable       503 api_error               budget_unavailable
    ├── BudgetBusy              503 api_error               budget_busy
    ├── RateLimitUnavailable    503 api_error               rate_limit_unavailable
    ├── SessionCheckFailed      503 api_error               session_check_failed
    ├── ServerBusy              503 api_error               server_busy
    └── UpstreamTimedOut        504 api_error               upstream_timeout

``envelope`` builds every OpenAI error envelope the gateway writes (answers and the error
events that end a stream); ``as_gateway_error`` is the one place an exception becomes the
``GatewayError`` a client is answered with.

The tree lives in four modules, re-exported here: ``base`` (the roots and the envelope),
``requests`` (answers to a request refused for what it is), ``refusals`` (answers for the
gateway's own state: budgets, rate limits, databases, capacity) and ``upstream`` (the
upstream answers and exceptions, and the mapping to a client's answer).
"""

from __future__ import annotations

from gateway.domain.errors.base import (
    UNEXPECTED_MESSAGE,
    GatewayError,
    GatewayException,
    envelope,
    error_type_for,
)
from gateway.domain.errors.refusals import (
    BudgetBusy,
    BudgetCheckFailed,
    BudgetExceeded,
    BudgetUnavailable,
    InternalError,
    RateLimited,
    RateLimitExceeded,
    RateLimitUnavailable,
    ServerBusy,
    SessionCheckFailed,
)
from gateway.domain.errors.requests import (
    AlreadyExists,
    AuthenticationFailed,
    ConfigurationNotAllowed,
    Conflict,
    CrossSiteRequest,
    HostNotAllowed,
    InvalidJson,
    InvalidRequest,
    KeyFromFile,
    MethodNotAllowed,
    ModelNotFound,
    NoEligibleModel,
    NotFound,
    RequestHeadTimedOut,
    RequestHeadTooLarge,
    RequestTooLarge,
    TeamFromFile,
    TeamHasKeys,
    UnsupportedMediaType,
)
from gateway.domain.errors.upstream import (
    InvalidUpstreamResponse,
    TranslationError,
    UpstreamAuthFailed,
    UpstreamError,
    UpstreamFailed,
    UpstreamRejected,
    UpstreamTimedOut,
    as_gateway_error,
    exhausted,
)

__all__ = [
    "UNEXPECTED_MESSAGE",
    "AlreadyExists",
    "AuthenticationFailed",
    "BudgetBusy",
    "BudgetCheckFailed",
    "BudgetExceeded",
    "BudgetUnavailable",
    "ConfigurationNotAllowed",
    "Conflict",
    "CrossSiteRequest",
    "GatewayError",
    "GatewayException",
    "HostNotAllowed",
    "InternalError",
    "InvalidJson",
    "InvalidRequest",
    "InvalidUpstreamResponse",
    "KeyFromFile",
    "MethodNotAllowed",
    "ModelNotFound",
    "NoEligibleModel",
    "NotFound",
    "RateLimitExceeded",
    "RateLimitUnavailable",
    "RateLimited",
    "RequestHeadTimedOut",
    "RequestHeadTooLarge",
    "RequestTooLarge",
    "ServerBusy",
    "SessionCheckFailed",
    "TeamFromFile",
    "TeamHasKeys",
    "TranslationError",
    "UnsupportedMediaType",
    "UpstreamAuthFailed",
    "UpstreamError",
    "UpstreamFailed",
    "UpstreamRejected",
    "UpstreamTimedOut",
    "as_gateway_error",
    "envelope",
    "error_type_for",
    "exhausted",
]
