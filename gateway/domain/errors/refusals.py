"""The answers to a request refused for the gateway's own state: a budget, a rate limit,
a database away or saturated, a fault of its own, no connection slot free (429/500/503)."""

from __future__ import annotations

from gateway.domain.errors.base import UNEXPECTED_MESSAGE, GatewayError
from gateway.domain.failures import ErrorClass


class BudgetExceeded(GatewayError):
    status = 429
    code = "budget_exceeded"
    error_class = ErrorClass.BUDGET_EXCEEDED

    def __init__(self, message: str, *, retry_after_seconds: int | None = None) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        if self.retry_after_seconds is None:
            return {}
        return {"retry-after": str(self.retry_after_seconds)}


class RateLimited(GatewayError):
    status = 429
    code = "rate_limited"
    error_class = ErrorClass.UPSTREAM_429

    def __init__(self, message: str, *, retry_after: str | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"retry-after": self.retry_after} if self.retry_after else {}


class RateLimitExceeded(GatewayError):
    """A key, team or configuration rate limit (``rateLimit``) refused the call, or every
    model it could be sent to is at its own ``models[].rateLimit``."""

    status = 429
    code = "rate_limit_exceeded"
    error_class = ErrorClass.RATE_LIMIT_EXCEEDED

    def __init__(self, message: str, *, retry_after_seconds: int = 1) -> None:
        super().__init__(message)
        self.retry_after_seconds = retry_after_seconds

    def headers(self) -> dict[str, str]:
        return {"retry-after": str(self.retry_after_seconds)}


class RateLimitUnavailable(GatewayError):
    """Redis (``redis.url``) is away and ``rateLimits.onRedisOutage`` is ``refuse``."""

    status = 503
    code = "rate_limit_unavailable"
    error_class = ErrorClass.RATE_LIMIT_UNAVAILABLE

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class InternalError(GatewayError):
    """A fault of the gateway's own (a bug): the answer says no more than that. It never
    counts against a provider: not retried, not fallen back from, no health or circuit
    change."""

    error_class = ErrorClass.INTERNAL_ERROR

    def __init__(self, message: str = UNEXPECTED_MESSAGE) -> None:
        super().__init__(message)


class BudgetCheckFailed(GatewayError):
    """The budget check hit a database error that is not an outage: the call is refused."""

    error_class = ErrorClass.BUDGET_ERROR


class BudgetUnavailable(GatewayError):
    """The budget database is down and ``budgets.onDatabaseOutage`` is ``refuse``."""

    status = 503
    code = "budget_unavailable"
    error_class = ErrorClass.BUDGET_UNAVAILABLE


class BudgetBusy(GatewayError):
    """The budget database stayed saturated past the check's wait: refused whatever
    ``budgets.onDatabaseOutage`` says, because a call admitted unchecked under load is how
    a burst overruns a budget."""

    status = 503
    code = "budget_busy"
    error_class = ErrorClass.BUDGET_BUSY

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class SessionCheckFailed(GatewayError):
    """A console session's sign-out could not be read or written: the database is
    unreachable. Refused rather than trusted, since a signed-out cookie may be replayed;
    the admin key as a bearer needs no database."""

    status = 503
    code = "session_check_failed"

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}


class ServerBusy(GatewayError):
    """Every connection slot of this process is taken; a retry soon may find one free."""

    status = 503
    code = "server_busy"

    def headers(self) -> dict[str, str]:
        return {"retry-after": "1"}
