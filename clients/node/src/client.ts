// Client: one method per route of `delayq serve`'s HTTP API
// (docs/openapi.yaml), with typed errors (errors.ts) and retries.
//
// Which calls are retried, on 503 (the store could not be reached) and on a
// failed connection, and why. A reply can be lost after the server acted,
// so a call is repeated only when acting twice does no harm:
//
// - Every GET: it changes nothing.
// - enqueue / enqueueBatch WITH an id: the id stays taken while the job
//   lives, so a repeat cannot add a second job (it may answer
//   AlreadyExistsError for the job the lost reply had added). Without an id
//   each attempt adds a new job: never repeated.
// - cancel, retry, promote, pause, resume, setLimit, clearLimit,
//   putSchedule, deleteSchedule: the second call leaves the same state as
//   the first (it may answer NotFoundError or FailedPreconditionError when
//   the first did the work).
// - kick and purge only without a count: "all" twice is still all, while
//   a count repeated could move or delete twice that many.
// - ack, ackMany, release, touch: fenced by the lease's token; a repeat of
//   one that took effect is refused (FailedPreconditionError) and changes
//   nothing. touch only extends the lease again.
// - Never reserve: a lost reply leaves its jobs leased to nobody until
//   their ttr runs out, an attempt spent. Never fail: it spends an attempt
//   and schedules the retry; when it does not get through, the lease runs
//   out and the job comes back all the same, so the caller loses nothing
//   by seeing the error.

import {
  decodeCounts,
  decodeEvent,
  decodeJob,
  decodeLease,
  decodeLimit,
  decodeSchedule,
  encodeOptions,
  putBytes,
} from "./codec";
import { errorFromReply, DelayqError } from "./errors";
import { Transport } from "./transport";
import type {
  Bytes,
  Counts,
  FlowJob,
  HistoryEvent,
  Job,
  JobOptions,
  JobPage,
  JobState,
  WorkersPage,
  Lease,
  LeaseRef,
  Limit,
  LimitSpec,
  Schedule,
  ScheduleSpec,
  TopicStats,
} from "./types";

export interface ClientOptions {
  /** The server's base URL; default "http://127.0.0.1:7070". */
  url?: string;
  /** The bearer token of a server started with --token-file. */
  token?: string;
  /** How long to wait for a reply, on top of a long poll's own wait (default 30000 ms). */
  timeoutMs?: number;
  /** Retries of a call that is safe to repeat (default 3; 0: none). */
  retries?: number;
  /** The first retry's delay (default 100 ms); each further one doubles it, up to 5 s, with jitter. */
  retryDelayMs?: number;
  /** A fetch to use instead of the global one. */
  fetch?: typeof fetch;
}

/** How ackMany went: the leases acked, and why each other one was not. */
export interface AckManyResult {
  acked: number;
  errors: Array<{ id: string; error: DelayqError }>;
}

/** How a bulk action went: the jobs it was done to, and why each other one was not. */
export interface BulkResult {
  done: number;
  errors: Array<{ id: string; error: DelayqError }>;
}

/** What bulk() may do to each job: as cancel(), retry() or promote(). */
export type BulkAction = "cancel" | "retry" | "promote";

/** The errors of a reply about many items, each by its id. */
function errorsById(errors: any[] | undefined): Array<{ id: string; error: DelayqError }> {
  return (errors ?? []).map((e: any) => ({
    id: e.id,
    error: errorFromReply(statusOfCode[e.code] ?? 500, JSON.stringify({ code: e.code, message: e.message })),
  }));
}

/** What ackAndReserve() did: the ack, and the next job's lease. */
export interface AckAndReserveResult {
  /** Whether the ack was taken; `ackError` says why not (a stale lease). */
  acked: boolean;
  ackError?: DelayqError;
  /** The next job's lease; none when nothing came due in time. */
  lease?: Lease;
  /** Why the reservation failed, when it did. */
  reserveError?: DelayqError;
}

// The HTTP status of a code, for errors that come inside a 200 reply.
const statusOfCode: Record<string, number> = {
  INVALID_ARGUMENT: 400,
  NOT_FOUND: 404,
  ALREADY_EXISTS: 409,
  FAILED_PRECONDITION: 409,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNIMPLEMENTED: 501,
  DATA_LOSS: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

function seg(value: string): string {
  if (typeof value !== "string" || value === "") {
    throw new TypeError("ids, topics and names must be non-empty strings");
  }
  return encodeURIComponent(value);
}

function decodeStats(json: any): TopicStats {
  return {
    topic: json.topic,
    delayed: json.delayed ?? 0,
    ready: json.ready ?? 0,
    reserved: json.reserved ?? 0,
    dead: json.dead ?? 0,
    done: json.done ?? 0,
    paused: json.paused ?? false,
  };
}

export class Client {
  private readonly http: Transport;

  constructor(options: ClientOptions = {}) {
    this.http = new Transport({
      url: options.url ?? "http://127.0.0.1:7070",
      token: options.token,
      timeoutMs: options.timeoutMs ?? 30_000,
      retries: options.retries ?? 3,
      retryBaseDelayMs: options.retryDelayMs ?? 100,
      retryMaxDelayMs: 5_000,
      fetch: options.fetch,
    });
  }

  // ---- jobs ----

  /** Adds one job; returns its id. */
  async enqueue(topic: string, payload: Bytes, options?: JobOptions): Promise<string> {
    const body: Record<string, unknown> = {};
    putBytes(body, "payload", payload);
    encodeOptions(options, body);
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/topics/${seg(topic)}/jobs`,
      body,
      retry: options?.id !== undefined,
    });
    return reply.id;
  }

  /**
   * Adds many jobs with the same options in one store call; returns their
   * ids in the payloads' order. Text payloads travel as text; when any is
   * bytes, all travel as bytes (the text ones as UTF-8).
   */
  async enqueueBatch(topic: string, payloads: Bytes[], options?: JobOptions): Promise<string[]> {
    const body: Record<string, unknown> = {};
    if (payloads.every((p) => typeof p === "string")) {
      body.payloads = payloads;
    } else {
      const encoder = new TextEncoder();
      body.payloads_base64 = payloads.map((p) => {
        const holder: Record<string, unknown> = {};
        putBytes(holder, "p", typeof p === "string" ? encoder.encode(p) : p);
        return holder.p_base64;
      });
    }
    encodeOptions(options, body);
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/topics/${seg(topic)}/jobs/batch`,
      body,
      retry: options?.id !== undefined,
    });
    return reply.ids;
  }

  /**
   * Adds jobs of any topics that wait for each other, all or nothing, in
   * one store call; returns their ids in the order given. A job's `after`
   * may name jobs of the flow by their `id`, in any order.
   */
  async enqueueFlow(jobs: FlowJob[]): Promise<string[]> {
    const items = jobs.map(({ topic, payload, ...options }) => {
      const item: Record<string, unknown> = { topic };
      putBytes(item, "payload", payload);
      encodeOptions(options, item);
      return item;
    });
    // As enqueue(): repeated after a lost reply only when every job has its
    // id, so that a repeat cannot add a flow twice.
    const reply = await this.http.json({
      method: "POST",
      path: "/v1/flows",
      body: { jobs: items },
      retry: jobs.every((job) => job.id !== undefined),
    });
    return reply.ids;
  }

  /**
   * One job. With `waitMs` (at most 60000), waits until the job has finished
   * (done or dead) or the wait is over, then answers it as it is.
   */
  async get(id: string, options: { waitMs?: number } = {}): Promise<Job> {
    const waitMs = options.waitMs;
    const reply = await this.http.json({
      method: "GET",
      path: `/v1/jobs/${seg(id)}`,
      query: { wait: waitMs !== undefined ? `${Math.max(0, Math.round(waitMs))}ms` : undefined },
      retry: true,
      holdMs: waitMs,
    });
    return decodeJob(reply);
  }

  /** A topic's jobs in one state (default ready), in the order workers take them. */
  async list(topic: string, options: { state?: Exclude<JobState, "done">; limit?: number } = {}): Promise<Job[]> {
    const reply = await this.http.json({
      method: "GET",
      path: `/v1/topics/${seg(topic)}/jobs`,
      query: { state: options.state, limit: options.limit },
      retry: true,
    });
    return (reply.jobs ?? []).map(decodeJob);
  }

  /**
   * One page of a topic's jobs in one state (default ready), in the order of
   * list(), after `cursor` (the `nextCursor` of the previous page; omit it for
   * the first). `nextCursor` is "" once the page ends the list. A job that
   * stays in the state while the pages are read is seen exactly once; one
   * that enters, leaves or moves meanwhile may be seen once, twice or not.
   */
  async listPage(
    topic: string,
    options: { state?: JobState; limit?: number; cursor?: string } = {},
  ): Promise<JobPage> {
    const reply = await this.http.json({
      method: "GET",
      path: `/v1/topics/${seg(topic)}/jobs`,
      query: { state: options.state, limit: options.limit, cursor: options.cursor || undefined },
      retry: true,
    });
    return { jobs: (reply.jobs ?? []).map(decodeJob), nextCursor: reply.next_cursor ?? "" };
  }

  /**
   * Live leases with who holds them (the reserving scheduler's name; the
   * server's for an HTTP reservation) and since when, a page at a time:
   * topic by topic, each by deadline. `nextCursor` is "" at the end.
   */
  async workers(options: { limit?: number; cursor?: string } = {}): Promise<WorkersPage> {
    const reply = await this.http.json({
      method: "GET",
      path: "/v1/workers",
      query: { limit: options.limit, cursor: options.cursor || undefined },
      retry: true,
    });
    const leases = (reply.leases ?? []).map((l: any) => ({
      holder: l.holder,
      topic: l.topic,
      id: l.id,
      reservedAt: l.reserved_at ? new Date(l.reserved_at) : null,
      deadline: new Date(l.deadline),
      attempts: l.attempts,
      maxAttempts: l.max_attempts,
    }));
    return { leases, nextCursor: reply.next_cursor ?? "" };
  }

  /** The job's recent events as the server saw them, oldest first. */
  async history(id: string): Promise<HistoryEvent[]> {
    const reply = await this.http.json({ method: "GET", path: `/v1/jobs/${seg(id)}/history`, retry: true });
    return (reply.events ?? []).map(decodeEvent);
  }

  /** Deletes the job, in any state. */
  async cancel(id: string): Promise<void> {
    await this.http.json({ method: "DELETE", path: `/v1/jobs/${seg(id)}`, retry: true });
  }

  /** Moves one dead job back to ready. */
  async retry(id: string): Promise<void> {
    await this.http.json({ method: "POST", path: `/v1/jobs/${seg(id)}/retry`, retry: true });
  }

  /** Runs a delayed job now, attempts kept. */
  async promote(id: string): Promise<void> {
    await this.http.json({ method: "POST", path: `/v1/jobs/${seg(id)}/promote`, retry: true });
  }

  /**
   * Cancels, retries or promotes many jobs (up to 10,000) in one request;
   * each id stands on its own, as with the one-job calls.
   */
  async bulk(action: BulkAction, ids: string[]): Promise<BulkResult> {
    const reply = await this.http.json({ method: "POST", path: `/v1/bulk/${action}`, body: { ids }, retry: true });
    return { done: reply.done ?? 0, errors: errorsById(reply.errors) };
  }

  // ---- leases ----

  /**
   * Leases up to `max` (default 1, at most 1000) due jobs of the topic,
   * waiting up to `waitMs` (capped by the server's --max-wait) for one.
   * Returns none when nothing came due in time.
   */
  async reserve(
    topic: string,
    options: { waitMs?: number; max?: number; worker?: string } = {},
  ): Promise<Lease[]> {
    const body: Record<string, unknown> = {};
    if (options.waitMs !== undefined) body.wait_ms = Math.max(0, Math.round(options.waitMs));
    if (options.max !== undefined) body.max = options.max;
    // Who holds the leases (workers()); the server's name without it.
    if (options.worker !== undefined) body.worker = options.worker;
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/topics/${seg(topic)}/reserve`,
      body,
      retry: false,
      holdMs: options.waitMs,
    });
    return (reply.leases ?? []).map(decodeLease);
  }

  /**
   * Done: the job is deleted, or kept done with `result` when it was added
   * with keepForMs. FailedPreconditionError when the lease is no longer current.
   */
  async ack(lease: LeaseRef, result?: Bytes): Promise<void> {
    const body: Record<string, unknown> = { token: lease.token };
    if (result !== undefined && result !== null) putBytes(body, "result", result);
    await this.http.json({ method: "POST", path: `/v1/jobs/${seg(lease.id)}/ack`, body, retry: true });
  }

  /**
   * Acks the lease and reserves the next job of `topic` (waiting up to
   * `waitMs`) in one request, one store call where the store can: a
   * consumer that takes one job at a time makes one request per job. A
   * refused ack does not stop the reservation. Not retried: a retry after a
   * lost reply could lease a second job.
   */
  async ackAndReserve(
    lease: LeaseRef,
    topic: string,
    options: { waitMs?: number; result?: Bytes; worker?: string } = {},
  ): Promise<AckAndReserveResult> {
    const next: Record<string, unknown> = { topic };
    if (options.waitMs !== undefined) next.wait_ms = Math.max(0, Math.round(options.waitMs));
    // Who holds the next lease, as in reserve().
    if (options.worker !== undefined) next.worker = options.worker;
    const body: Record<string, unknown> = { token: lease.token, next };
    if (options.result !== undefined && options.result !== null) putBytes(body, "result", options.result);
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/jobs/${seg(lease.id)}/ack`,
      body,
      retry: false,
      holdMs: options.waitMs,
    });
    const asError = (e: any) =>
      e ? errorFromReply(statusOfCode[e.code] ?? 500, JSON.stringify({ code: e.code, message: e.message })) : undefined;
    const [nextLease] = (reply.leases ?? []).map(decodeLease);
    return {
      acked: reply.acked === true,
      ackError: asError(reply.ack_error),
      lease: nextLease,
      reserveError: asError(reply.reserve_error),
    };
  }

  /** Acks many leases in one store call; each lease stands on its own. */
  async ackMany(leases: LeaseRef[]): Promise<AckManyResult> {
    const reply = await this.http.json({
      method: "POST",
      path: "/v1/leases/ack",
      body: { leases: leases.map((l) => ({ id: l.id, token: l.token })) },
      retry: true,
    });
    return { acked: reply.acked ?? 0, errors: errorsById(reply.errors) };
  }

  /**
   * Failed with `error` (an Error gives its message): the job runs again
   * after its backoff, or goes dead on its last attempt. (The API takes no
   * delay of the caller's here: the job's backoff decides.)
   */
  async fail(lease: LeaseRef, error: string | Error): Promise<void> {
    const text = error instanceof Error ? error.message || error.name : String(error);
    await this.http.json({
      method: "POST",
      path: `/v1/jobs/${seg(lease.id)}/fail`,
      body: { token: lease.token, error: text },
      retry: false,
    });
  }

  /** Gives the job back without using an attempt, due after `delayMs` (default 0). */
  async release(lease: LeaseRef, options: { delayMs?: number } = {}): Promise<void> {
    const body: Record<string, unknown> = { token: lease.token };
    if (options.delayMs !== undefined) body.delay_ms = Math.max(0, Math.round(options.delayMs));
    await this.http.json({ method: "POST", path: `/v1/jobs/${seg(lease.id)}/release`, body, retry: true });
  }

  /**
   * Extends the lease to now + the job's ttr; returns the new deadline (and
   * sets it on `lease` when that has a deadline field).
   */
  async touch(lease: LeaseRef & { deadline?: Date }): Promise<Date> {
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/jobs/${seg(lease.id)}/touch`,
      body: { token: lease.token },
      retry: true,
    });
    const deadline = new Date(reply.deadline);
    if ("deadline" in lease) lease.deadline = deadline;
    return deadline;
  }

  // ---- topics ----

  /** Every topic with jobs, paused, limited, filled by a schedule or counted in the last hour. */
  async topics(): Promise<TopicStats[]> {
    const reply = await this.http.json({ method: "GET", path: "/v1/topics", retry: true });
    return (reply.topics ?? []).map(decodeStats);
  }

  /** One topic's counts. */
  async stats(topic: string): Promise<TopicStats> {
    return decodeStats(await this.http.json({ method: "GET", path: `/v1/topics/${seg(topic)}/stats`, retry: true }));
  }

  /** Moves up to `max` (default all) dead jobs back to ready; returns how many moved. */
  async kick(topic: string, max?: number): Promise<number> {
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/topics/${seg(topic)}/kick`,
      body: max !== undefined ? { max } : {},
      retry: max === undefined,
    });
    return reply.kicked ?? 0;
  }

  /** Deletes up to `max` (default all) dead jobs, oldest death first; returns how many went. */
  async purge(topic: string, options: { state?: "dead"; max?: number } = {}): Promise<number> {
    const body: Record<string, unknown> = { state: options.state ?? "dead" };
    if (options.max !== undefined) body.max = options.max;
    const reply = await this.http.json({
      method: "POST",
      path: `/v1/topics/${seg(topic)}/purge`,
      body,
      retry: options.max === undefined,
    });
    return reply.purged ?? 0;
  }

  /** Stops delivering the topic's jobs, for every process on the store. */
  async pause(topic: string): Promise<TopicStats> {
    return decodeStats(await this.http.json({ method: "POST", path: `/v1/topics/${seg(topic)}/pause`, retry: true }));
  }

  /** Delivers the topic's jobs again. */
  async resume(topic: string): Promise<TopicStats> {
    return decodeStats(await this.http.json({ method: "POST", path: `/v1/topics/${seg(topic)}/resume`, retry: true }));
  }

  /** What the store counted per topic and minute, the last `minutes` (default 60). */
  async counts(options: { minutes?: number; topic?: string } = {}): Promise<Counts> {
    const reply = await this.http.json({
      method: "GET",
      path: "/v1/counts",
      query: { minutes: options.minutes, topic: options.topic },
      retry: true,
    });
    return decodeCounts(reply);
  }

  // ---- limits ----

  /** Every limited topic with its limit. */
  async limits(): Promise<Limit[]> {
    const reply = await this.http.json({ method: "GET", path: "/v1/limits", retry: true });
    return (reply.limits ?? []).map(decodeLimit);
  }

  /** The topic's limit; NotFoundError when it has none. */
  async limit(topic: string): Promise<Limit> {
    return decodeLimit(await this.http.json({ method: "GET", path: `/v1/topics/${seg(topic)}/limit`, retry: true }));
  }

  /** Sets (replaces) the topic's limit; returns it as stored. */
  async setLimit(topic: string, limit: LimitSpec): Promise<Limit> {
    const body: Record<string, unknown> = {};
    if (limit.rate !== undefined) body.rate = limit.rate;
    if (limit.periodMs !== undefined) body.period_ms = limit.periodMs;
    if (limit.burst !== undefined) body.burst = limit.burst;
    if (limit.concurrency !== undefined) body.concurrency = limit.concurrency;
    return decodeLimit(
      await this.http.json({ method: "PUT", path: `/v1/topics/${seg(topic)}/limit`, body, retry: true }),
    );
  }

  /** Removes the topic's limit. */
  async clearLimit(topic: string): Promise<void> {
    await this.http.json({ method: "DELETE", path: `/v1/topics/${seg(topic)}/limit`, retry: true });
  }

  // ---- schedules ----

  /** Every periodic schedule, by name, with its next run. */
  async schedules(): Promise<Schedule[]> {
    const reply = await this.http.json({ method: "GET", path: "/v1/schedules", retry: true });
    return (reply.schedules ?? []).map(decodeSchedule);
  }

  /** One schedule; NotFoundError when there is none of that name. */
  async schedule(name: string): Promise<Schedule> {
    return decodeSchedule(await this.http.json({ method: "GET", path: `/v1/schedules/${seg(name)}`, retry: true }));
  }

  /** Stores (replaces) a periodic schedule; returns it with its next run. */
  async putSchedule(name: string, spec: ScheduleSpec): Promise<Schedule> {
    const body: Record<string, unknown> = { spec: spec.spec, topic: spec.topic };
    if (spec.payload !== undefined) putBytes(body, "payload", spec.payload);
    const fields: Array<[keyof ScheduleSpec, string]> = [
      ["timeZone", "time_zone"],
      ["missed", "missed"],
      ["jitterMs", "jitter_ms"],
      ["priority", "priority"],
      ["ttrMs", "ttr_ms"],
      ["maxAttempts", "max_attempts"],
      ["backoff", "backoff"],
    ];
    for (const [name, field] of fields) {
      if (spec[name] !== undefined) body[field] = spec[name];
    }
    return decodeSchedule(
      await this.http.json({ method: "PUT", path: `/v1/schedules/${seg(name)}`, body, retry: true }),
    );
  }

  /** Deletes a schedule; the jobs it already enqueued stay. */
  async deleteSchedule(name: string): Promise<void> {
    await this.http.json({ method: "DELETE", path: `/v1/schedules/${seg(name)}`, retry: true });
  }

  // ---- the server ----

  /** The Prometheus metrics text of GET /metrics. */
  async metrics(): Promise<string> {
    return this.http.text({ method: "GET", path: "/metrics", retry: true });
  }
}
