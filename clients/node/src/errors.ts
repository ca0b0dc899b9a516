// Errors of the delayq HTTP API as typed exceptions.
//
// The server answers every failed request with {"code": "...", "message":
// "..."}: `code` is the absl status code's name (NOT_FOUND, ALREADY_EXISTS,
// ...) and the HTTP status matches it. Each code becomes a subclass of
// DelayqError, so a caller can write `catch (e) { if (e instanceof
// NotFoundError) ... }`. Failures that never got an answer are errors too:
// ConnectionError (no connection, or it broke) is an UnavailableError and
// TimeoutError (the client stopped waiting) a DeadlineExceededError, so one
// `instanceof UnavailableError` covers a server that is down and a server
// whose store is down.

/** Any error of a delayq call. */
export class DelayqError extends Error {
  /** The API's code, e.g. "NOT_FOUND"; "UNKNOWN" when the reply had none. */
  readonly code: string;
  /** The HTTP status; 0 when no reply came (ConnectionError, TimeoutError). */
  readonly status: number;

  constructor(message: string, code = "UNKNOWN", status = 0, options?: { cause?: unknown }) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.status = status;
    if (options && options.cause !== undefined) {
      Object.defineProperty(this, "cause", { value: options.cause, configurable: true, writable: true });
    }
  }
}

/** 400 (and 415): a bad argument, malformed JSON or an unknown field. */
export class InvalidArgumentError extends DelayqError {}
/** 401: the server wants a bearer token (Client's `token`) or another one. */
export class UnauthenticatedError extends DelayqError {}
/** 403: a request from another origin, or to a Host the server does not answer to. */
export class PermissionDeniedError extends DelayqError {}
/** 404: no such job, schedule, limit or route. */
export class NotFoundError extends DelayqError {}
/** 409: a live job already has the id (enqueue with `replace` to move it). */
export class AlreadyExistsError extends DelayqError {}
/** 409: the job is in the wrong state, or a lease's token is no longer current. */
export class FailedPreconditionError extends DelayqError {}
/** 413, 429, 431: a body or headers too large, or the store out of memory. */
export class ResourceExhaustedError extends DelayqError {}
/** 501: the store cannot do this (for instance, jobs that wait for others on a store without dependencies). */
export class UnimplementedError extends DelayqError {}
/** 500: the server failed. */
export class InternalError extends DelayqError {}
/** 500: the store holds a record it cannot read. */
export class DataLossError extends DelayqError {}
/** 503: the store cannot be reached. */
export class UnavailableError extends DelayqError {}
/** 504: the store did not answer in time; the change may or may not have been made. */
export class DeadlineExceededError extends DelayqError {}
/** The request was cancelled (the server saw the client go away). */
export class CancelledError extends DelayqError {}

/** No connection to the server, or it broke before the reply came. */
export class ConnectionError extends UnavailableError {}
/** The client gave up waiting for the reply (Client's `timeoutMs`). */
export class TimeoutError extends DeadlineExceededError {}

type ErrorClass = new (message: string, code?: string, status?: number) => DelayqError;

const byCode: Record<string, ErrorClass> = {
  INVALID_ARGUMENT: InvalidArgumentError,
  UNAUTHENTICATED: UnauthenticatedError,
  PERMISSION_DENIED: PermissionDeniedError,
  NOT_FOUND: NotFoundError,
  ALREADY_EXISTS: AlreadyExistsError,
  FAILED_PRECONDITION: FailedPreconditionError,
  RESOURCE_EXHAUSTED: ResourceExhaustedError,
  UNIMPLEMENTED: UnimplementedError,
  INTERNAL: InternalError,
  DATA_LOSS: DataLossError,
  UNAVAILABLE: UnavailableError,
  DEADLINE_EXCEEDED: DeadlineExceededError,
  CANCELLED: CancelledError,
};

// A reply without a recognised code (a proxy's page, say) is classed by
// its HTTP status.
const byStatus: Record<number, string> = {
  400: "INVALID_ARGUMENT",
  401: "UNAUTHENTICATED",
  403: "PERMISSION_DENIED",
  404: "NOT_FOUND",
  409: "FAILED_PRECONDITION",
  413: "RESOURCE_EXHAUSTED",
  415: "INVALID_ARGUMENT",
  429: "RESOURCE_EXHAUSTED",
  431: "RESOURCE_EXHAUSTED",
  500: "INTERNAL",
  501: "UNIMPLEMENTED",
  502: "UNAVAILABLE",
  503: "UNAVAILABLE",
  504: "DEADLINE_EXCEEDED",
};

/** The typed error for an HTTP error reply with the given status and body text. */
export function errorFromReply(status: number, bodyText: string): DelayqError {
  let code: string | undefined;
  let message: string | undefined;
  try {
    const body = JSON.parse(bodyText);
    if (body && typeof body === "object") {
      if (typeof body.code === "string") code = body.code;
      if (typeof body.message === "string") message = body.message;
    }
  } catch {
    // Not JSON: keep the text as the message.
  }
  const known = code !== undefined && byCode[code] !== undefined;
  const effective = known ? (code as string) : byStatus[status];
  const cls = (effective !== undefined && byCode[effective]) || DelayqError;
  const text = message ?? (bodyText.trim().slice(0, 200) || `HTTP ${status}`);
  return new cls(text, code ?? effective ?? "UNKNOWN", status);
}
