"""The errors of the delayq HTTP API, one class per error code.

Every error reply of `delayq serve` is {"code": "...", "message": "..."}
with the code's matching HTTP status; `error_from_reply` turns one into the
class of its code, so callers catch what they mean (NotFoundError,
FailedPreconditionError for a stale lease, ...). Trouble reaching the
server at all is ConnectionFailedError, a kind of UnavailableError.
"""


class DelayqError(Exception):
    """An error the server answered, or none reached it (code UNAVAILABLE)."""

    code = "UNKNOWN"

    def __init__(self, message, status=None, code=None):
        super().__init__(message)
        self.message = message
        self.status = status
        if code is not None:
            self.code = code

    def __str__(self):
        return f"{self.code}: {self.message}"


class InvalidArgumentError(DelayqError):
    code = "INVALID_ARGUMENT"


class UnauthenticatedError(DelayqError):
    code = "UNAUTHENTICATED"


class PermissionDeniedError(DelayqError):
    code = "PERMISSION_DENIED"


class NotFoundError(DelayqError):
    code = "NOT_FOUND"


class AlreadyExistsError(DelayqError):
    code = "ALREADY_EXISTS"


class FailedPreconditionError(DelayqError):
    """Also a lease whose token is no longer current: nothing changed."""

    code = "FAILED_PRECONDITION"


class ResourceExhaustedError(DelayqError):
    code = "RESOURCE_EXHAUSTED"


class UnimplementedError(DelayqError):
    code = "UNIMPLEMENTED"


class InternalError(DelayqError):
    code = "INTERNAL"


class DataLossError(DelayqError):
    code = "DATA_LOSS"


class UnavailableError(DelayqError):
    """The store (or the server) cannot be reached; worth trying again."""

    code = "UNAVAILABLE"


class ConnectionFailedError(UnavailableError):
    """No answer from the server: refused, reset, or timed out."""


class DeadlineExceededError(DelayqError):
    """The store did not answer in time: the change may or may not be made."""

    code = "DEADLINE_EXCEEDED"


_BY_CODE = {
    cls.code: cls
    for cls in (
        InvalidArgumentError,
        UnauthenticatedError,
        PermissionDeniedError,
        NotFoundError,
        AlreadyExistsError,
        FailedPreconditionError,
        ResourceExhaustedError,
        UnimplementedError,
        InternalError,
        DataLossError,
        UnavailableError,
        DeadlineExceededError,
    )
}


def error_from_reply(status, body):
    """The error of an HTTP reply with status `status` and parsed `body`."""
    code = "UNKNOWN"
    message = f"HTTP {status}"
    if isinstance(body, dict):
        code = str(body.get("code", code))
        message = str(body.get("message", message))
    cls = _BY_CODE.get(code, DelayqError)
    return cls(message, status=status, code=code)
