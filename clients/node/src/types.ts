// What the client's calls take and return: the API's JSON objects
// (docs/openapi.yaml) with camelCase names, times as Date and payloads as
// a string (text) or a Uint8Array (bytes that are not UTF-8).

/** A payload or result: text, or any bytes. */
export type Bytes = string | Uint8Array;

export type JobState = "delayed" | "ready" | "reserved" | "dead" | "done";

/** How a job is added (the API's JobOptions). Every field is optional. */
export interface JobOptions {
  /** Your id, unique while the job lives; generated when absent. */
  id?: string;
  /** Due this long from now (ms). */
  delayMs?: number;
  /** Due at this time; overrides delayMs. */
  runAt?: Date | string;
  /** Lower runs first (default 0). */
  priority?: number;
  /** Time to run: a lease lasts this long unless touched (ms, default 60000). */
  ttrMs?: number;
  /** Attempts before the job goes dead (default 3). */
  maxAttempts?: number;
  /** "fixed:DELAY" or "exp:BASE[:MAX]", e.g. "exp:1s:10m". */
  backoff?: string;
  /** Move the delayed or ready job with this id to the new payload and due time (debounce). */
  replace?: boolean;
  /** Once acked, keep the job this long, done, with its result (ms). */
  keepForMs?: number;
  /** With keepForMs: the topic keeps at most this many done jobs (0: 10000). */
  keepAtMost?: number;
  /** Not reserved by this time, the job is never delivered: it goes dead as "expired". */
  expireAt?: Date | string;
  /** The same, this long after it was added (ms); the earlier of the two applies. */
  expireAfterMs?: number;
  /** An expired job is deleted instead of kept dead. */
  discardExpired?: boolean;
  /** With `id`: the id stays taken this long after the job has left the store (ms). */
  uniqueForMs?: number;
  /** Ids of jobs this one waits for: it runs once every one of them is done. */
  after?: string[];
  /** When a job it waits for goes dead or is cancelled: fail (default), cancel or run this one. */
  onDependencyFailure?: "fail" | "cancel" | "run";
}

/** One job of a flow (enqueueFlow()): its topic and payload, and its options. */
export interface FlowJob extends JobOptions {
  topic: string;
  payload: Bytes;
}

/** One job as the server reports it. */
export interface Job {
  id: string;
  topic: string;
  state: JobState;
  priority: number;
  /** Attempts made so far (a reserved job counts the current one). */
  attempts: number;
  maxAttempts: number;
  ttrMs: number;
  backoff: string;
  enqueuedAt: Date;
  runAt: Date;
  /** A reserved job's lease deadline. */
  deadline: Date | null;
  /** When it was acked (done) or died (dead). */
  finishedAt: Date | null;
  /** Present when the job is kept once acked. */
  keepForMs?: number;
  keepAtMost?: number;
  /** Present when the job expires. */
  expireAt?: Date;
  discardExpired?: boolean;
  /** Present when the job has a dedup window. */
  uniqueForMs?: number;
  /** Present when the job was enqueued to wait for others: their ids, in order. */
  after?: string[];
  lastError: string;
  /** A done job's result, when its ack carried one. */
  result?: Bytes;
  payload: Bytes;
}

/** A reserved job: run it, then ack, fail or release it with this lease. */
/** One page of a job list (Client.listPage()). */
export interface JobPage {
  jobs: Job[];
  /** Gives the next page as `cursor`; "" when this page ends the list. */
  nextCursor: string;
}

/** A live lease in the workers view (Client.workers()). */
export interface HeldLease {
  holder: string;
  topic: string;
  id: string;
  /** Null for a lease made before the store kept it. */
  reservedAt: Date | null;
  deadline: Date;
  attempts: number;
  maxAttempts: number;
}

/** One page of the workers view; nextCursor is "" at the end. */
export interface WorkersPage {
  leases: HeldLease[];
  nextCursor: string;
}

export interface Lease {
  id: string;
  topic: string;
  /** The fencing token; ack, fail, release and touch send it back. */
  token: string;
  payload: Bytes;
  /** This attempt's number, 1 on the first. */
  attempt: number;
  maxAttempts: number;
  /** When the lease runs out unless touched; touch() moves it. */
  deadline: Date;
  ttrMs: number;
  /** The job as it was reserved. */
  job: Job;
  /**
   * The results the job's dependencies (`after`) left at their ack, by id:
   * one for each dependency kept done (`keepForMs`) when the job was
   * reserved; a dependency whose result was not kept has none.
   */
  dependencyResults: Map<string, Bytes>;
}

/** A lease's name: what ack and friends need of it. */
export interface LeaseRef {
  id: string;
  token: string;
}

export interface TopicStats {
  topic: string;
  delayed: number;
  ready: number;
  reserved: number;
  dead: number;
  /** Jobs kept after their ack. */
  done: number;
  paused: boolean;
}

/** A topic's limit as stored. */
export interface Limit {
  topic: string;
  rate: number;
  periodMs: number;
  burst: number;
  concurrency: number;
  /** e.g. "rate 50/1s, concurrency 10". */
  text: string;
}

/** A limit to set: `rate` reservations per `periodMs` (burst `burst`), at most `concurrency` at once; 0 turns either off. */
export interface LimitSpec {
  rate?: number;
  periodMs?: number;
  burst?: number;
  concurrency?: number;
}

/** A periodic schedule to store (PUT /v1/schedules/NAME). */
export interface ScheduleSpec {
  /** cron ("0 3 * * *", optional leading seconds), @daily etc., or "@every 90s". */
  spec: string;
  topic: string;
  payload?: Bytes;
  /** Default "UTC". */
  timeZone?: string;
  /** "skip" (default), "once" or "all:N". */
  missed?: string;
  jitterMs?: number;
  priority?: number;
  ttrMs?: number;
  maxAttempts?: number;
  backoff?: string;
}

/** A stored schedule. */
export interface Schedule {
  name: string;
  spec: string;
  topic: string;
  payload: Bytes;
  timeZone: string;
  missed: string;
  jitterMs: number;
  priority: number;
  ttrMs: number;
  maxAttempts: number;
  backoff: string;
  /** Every occurrence up to this time was enqueued or passed over. */
  doneThrough: Date | null;
  nextRun: Date | null;
  revision: number;
}

/** One event of a job's history, from the store's event log. */
export interface HistoryEvent {
  /** enqueued, promoted, reserved, succeeded, failed, retried, dead, expired, cancelled, lapsed, kicked (a dead job retried by hand), unblocked (a waiting job released by what it waited for). */
  event: string;
  at: Date;
  attempts: number;
  error?: string;
  /** The process that made it ("host:pid" unless it was given a name). */
  who?: string;
}

/** What the store counted in one minute for one topic. */
export interface CountMinute {
  minute: Date;
  topic: string;
  enqueued: number;
  done: number;
  failed: number;
  retried: number;
  expired: number;
  dead: number;
  lapsed: number;
  /** Deliveries per lateness bucket (bounds in Counts.latenessBoundsMs). */
  lateness: number[];
}

export interface Counts {
  now: Date;
  latenessBoundsMs: number[];
  minutes: CountMinute[];
}
