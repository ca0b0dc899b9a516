// JSON requests to `delayq serve` over the global fetch (Node 18+): the
// base URL, the bearer token, a timeout per request, error replies turned
// into typed errors, and retries. It knows requests and bytes, not jobs:
// which calls are safe to repeat is decided by the caller (client.ts) and
// passed in as `retry`.

import { ConnectionError, DelayqError, InternalError, TimeoutError, UnavailableError, errorFromReply } from "./errors";

export type Method = "GET" | "POST" | "PUT" | "DELETE";

export interface Request {
  method: Method;
  /** The path with its segments already percent-encoded, e.g. "/v1/jobs/a%2Fb". */
  path: string;
  query?: Record<string, string | number | undefined>;
  /** Sent as JSON (Content-Type: application/json); none when undefined. */
  body?: unknown;
  /**
   * Repeat the request on 503 (the store could not be reached) and on a
   * failed connection. Only for calls that do no harm when they reach the
   * store twice: the caller says which.
   */
  retry: boolean;
  /** Added to the timeout: how long the server may hold the request (long polls). */
  holdMs?: number;
}

export interface TransportOptions {
  url: string;
  token?: string;
  timeoutMs: number;
  retries: number;
  /** First retry's delay; each further retry doubles it, up to retryMaxDelayMs. */
  retryBaseDelayMs: number;
  retryMaxDelayMs: number;
  fetch?: typeof fetch;
}

export class Transport {
  private readonly base: string;
  private readonly headers: Record<string, string>;
  private readonly fetchFn: typeof fetch;

  constructor(private readonly options: TransportOptions) {
    this.base = options.url.replace(/\/+$/, "");
    this.headers = { Accept: "application/json" };
    if (options.token) this.headers.Authorization = `Bearer ${options.token}`;
    const fetchFn = options.fetch ?? (globalThis as { fetch?: typeof fetch }).fetch;
    if (typeof fetchFn !== "function") {
      throw new Error("delayq: no global fetch; Node 18 or newer is needed");
    }
    this.fetchFn = fetchFn;
  }

  /** The reply's JSON ({} for an empty body); throws a DelayqError on failure. */
  async json(request: Request): Promise<any> {
    const text = await this.text(request);
    if (text === "") return {};
    try {
      return JSON.parse(text);
    } catch {
      throw new InternalError(`reply is not JSON: ${text.slice(0, 200)}`, "INTERNAL", 200);
    }
  }

  /** The reply's body as text; throws a DelayqError on failure. */
  async text(request: Request): Promise<string> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.once(request);
      } catch (e) {
        const again =
          request.retry && attempt < this.options.retries && e instanceof UnavailableError;
        if (!again) throw e;
        await sleep(this.backoff(attempt));
      }
    }
  }

  // Exponential backoff with "equal jitter": half the step is certain, the
  // other half random, so clients that failed together spread out.
  private backoff(attempt: number): number {
    const step = Math.min(this.options.retryMaxDelayMs, this.options.retryBaseDelayMs * 2 ** attempt);
    return step / 2 + Math.random() * (step / 2);
  }

  private async once(request: Request): Promise<string> {
    const url = this.url(request);
    const headers: Record<string, string> = { ...this.headers };
    let body: string | undefined;
    if (request.body !== undefined) {
      headers["Content-Type"] = "application/json";
      body = JSON.stringify(request.body);
    }
    const controller = new AbortController();
    const timeoutMs = this.options.timeoutMs + (request.holdMs ?? 0);
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      let response: Response;
      try {
        response = await this.fetchFn(url, { method: request.method, headers, body, signal: controller.signal });
      } catch (e) {
        throw this.fetchError(e, controller, request, timeoutMs);
      }
      let text: string;
      try {
        text = await response.text();
      } catch (e) {
        throw this.fetchError(e, controller, request, timeoutMs);
      }
      if (!response.ok) throw errorFromReply(response.status, text);
      return text;
    } finally {
      clearTimeout(timer);
    }
  }

  private fetchError(e: unknown, controller: AbortController, request: Request, timeoutMs: number): DelayqError {
    const what = `${request.method} ${request.path}`;
    if (controller.signal.aborted) {
      return new TimeoutError(`${what}: no reply within ${timeoutMs} ms`, "DEADLINE_EXCEEDED", 0, { cause: e });
    }
    // fetch reports a refused or broken connection as a TypeError whose
    // cause tells the system error.
    const cause = (e as { cause?: { code?: string; message?: string } } | undefined)?.cause;
    const detail = cause?.code ?? cause?.message ?? (e as Error)?.message ?? String(e);
    return new ConnectionError(`${what}: cannot reach ${this.base}: ${detail}`, "UNAVAILABLE", 0, { cause: e });
  }

  private url(request: Request): string {
    let url = this.base + request.path;
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(request.query ?? {})) {
      if (value !== undefined) params.append(key, String(value));
    }
    const query = params.toString();
    if (query) url += `?${query}`;
    return url;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
