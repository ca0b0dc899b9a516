"""delayq: delayed jobs over the HTTP API of `delayq serve`.

Client has every route of the API; Worker runs a handler for each job of a
topic. The errors of the API are the classes of errors.py.
"""

from .client import JOB_OPTIONS, AckedAndNext, Client, Job, JobPage, Lease
from .errors import (
    AlreadyExistsError,
    ConnectionFailedError,
    DataLossError,
    DeadlineExceededError,
    DelayqError,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    NotFoundError,
    PermissionDeniedError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnavailableError,
    UnimplementedError,
)
from .worker import Worker

__version__ = "0.1.0"

__all__ = [
    "AckedAndNext",
    "AlreadyExistsError",
    "Client",
    "ConnectionFailedError",
    "DataLossError",
    "DeadlineExceededError",
    "DelayqError",
    "FailedPreconditionError",
    "InternalError",
    "InvalidArgumentError",
    "JOB_OPTIONS",
    "Job",
    "JobPage",
    "Lease",
    "NotFoundError",
    "PermissionDeniedError",
    "ResourceExhaustedError",
    "UnauthenticatedError",
    "UnavailableError",
    "UnimplementedError",
    "Worker",
]
