// The API's JSON (snake_case, RFC 3339 times, payload / payload_base64)
// to and from the client's types.

import type { Bytes, CountMinute, Counts, HistoryEvent, Job, JobOptions, JobState, Lease, Limit, Schedule } from "./types";

// Payloads: text travels as `NAME`, bytes as `NAME_base64`.

export function putBytes(out: Record<string, unknown>, name: string, value: Bytes): void {
  if (typeof value === "string") {
    out[name] = value;
  } else if (value instanceof Uint8Array) {
    out[`${name}_base64`] = toBase64(value);
  } else {
    throw new TypeError(`${name} must be a string or a Uint8Array`);
  }
}

export function getBytes(json: any, name: string): Bytes | undefined {
  if (typeof json[name] === "string") return json[name];
  if (typeof json[`${name}_base64`] === "string") return fromBase64(json[`${name}_base64`]);
  return undefined;
}

export function toBase64(bytes: Uint8Array): string {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text);
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
  return bytes;
}

function time(value: unknown): Date | null {
  return typeof value === "string" ? new Date(value) : null;
}

// JobOptions: camelCase name -> the API's field.
const optionFields: Array<[keyof JobOptions, string]> = [
  ["id", "id"],
  ["delayMs", "delay_ms"],
  ["priority", "priority"],
  ["ttrMs", "ttr_ms"],
  ["maxAttempts", "max_attempts"],
  ["backoff", "backoff"],
  ["replace", "replace"],
  ["keepForMs", "keep_for_ms"],
  ["keepAtMost", "keep_at_most"],
  ["expireAfterMs", "expire_after_ms"],
  ["discardExpired", "discard_expired"],
  ["uniqueForMs", "unique_for_ms"],
  ["after", "after"],
  ["onDependencyFailure", "on_dependency_failure"],
];
// Times: a Date or RFC 3339 text.
const timeFields: Array<[keyof JobOptions, string]> = [
  ["runAt", "run_at"],
  ["expireAt", "expire_at"],
];

/** The API's fields for `options`; only those given are sent. */
export function encodeOptions(options: JobOptions | undefined, out: Record<string, unknown>): void {
  if (!options) return;
  const known = new Set<string>([...optionFields, ...timeFields].map(([name]) => name));
  for (const name of Object.keys(options)) {
    if (!known.has(name)) throw new TypeError(`unknown job option '${name}'`);
  }
  for (const [name, field] of optionFields) {
    const value = options[name];
    if (value !== undefined) out[field] = value;
  }
  for (const [name, field] of timeFields) {
    const value = options[name];
    if (value !== undefined) out[field] = value instanceof Date ? value.toISOString() : value;
  }
}

export function decodeJob(json: any): Job {
  const job: Job = {
    id: json.id,
    topic: json.topic,
    state: json.state as JobState,
    priority: json.priority,
    attempts: json.attempts,
    maxAttempts: json.max_attempts,
    ttrMs: json.ttr_ms,
    backoff: json.backoff,
    enqueuedAt: time(json.enqueued_at) as Date,
    runAt: time(json.run_at) as Date,
    deadline: time(json.deadline),
    finishedAt: time(json.finished_at),
    lastError: json.last_error ?? "",
    payload: getBytes(json, "payload") ?? "",
  };
  if (json.keep_for_ms !== undefined) job.keepForMs = json.keep_for_ms;
  if (json.keep_at_most !== undefined) job.keepAtMost = json.keep_at_most;
  if (json.expire_at !== undefined) job.expireAt = new Date(json.expire_at);
  if (json.discard_expired !== undefined) job.discardExpired = json.discard_expired;
  if (json.unique_for_ms !== undefined) job.uniqueForMs = json.unique_for_ms;
  if (json.after !== undefined) job.after = json.after;
  const result = getBytes(json, "result");
  if (result !== undefined) job.result = result;
  return job;
}

export function decodeLease(json: any): Lease {
  const job = decodeJob(json.job);
  return {
    id: job.id,
    topic: job.topic,
    token: json.token,
    payload: job.payload,
    attempt: job.attempts,
    maxAttempts: job.maxAttempts,
    deadline: time(json.deadline) as Date,
    ttrMs: job.ttrMs,
    job,
    dependencyResults: decodeDependencyResults(json.dependency_results),
  };
}

/** The lease's `dependency_results` list, by id; empty when absent. */
function decodeDependencyResults(list: any): Map<string, Bytes> {
  const out = new Map<string, Bytes>();
  for (const entry of list ?? []) {
    out.set(entry.id, getBytes(entry, "result") ?? "");
  }
  return out;
}

export function decodeLimit(json: any): Limit {
  return {
    topic: json.topic,
    rate: json.rate,
    periodMs: json.period_ms,
    burst: json.burst,
    concurrency: json.concurrency,
    text: json.text,
  };
}

export function decodeSchedule(json: any): Schedule {
  return {
    name: json.name,
    spec: json.spec,
    topic: json.topic,
    payload: getBytes(json, "payload") ?? "",
    timeZone: json.time_zone,
    missed: json.missed,
    jitterMs: json.jitter_ms,
    priority: json.priority,
    ttrMs: json.ttr_ms,
    maxAttempts: json.max_attempts,
    backoff: json.backoff,
    doneThrough: time(json.done_through),
    nextRun: time(json.next_run),
    revision: json.revision,
  };
}

export function decodeEvent(json: any): HistoryEvent {
  const event: HistoryEvent = { event: json.event, at: time(json.at) as Date, attempts: json.attempts };
  if (typeof json.error === "string") event.error = json.error;
  if (typeof json.who === "string") event.who = json.who;
  return event;
}

export function decodeCounts(json: any): Counts {
  return {
    now: time(json.now) as Date,
    latenessBoundsMs: json.lateness_bounds_ms ?? [],
    minutes: (json.minutes ?? []).map(
      (m: any): CountMinute => ({
        minute: time(m.minute) as Date,
        topic: m.topic,
        enqueued: m.enqueued ?? 0,
        done: m.done ?? 0,
        failed: m.failed ?? 0,
        retried: m.retried ?? 0,
        expired: m.expired ?? 0,
        dead: m.dead ?? 0,
        lapsed: m.lapsed ?? 0,
        lateness: m.lateness ?? [],
      }),
    ),
  };
}
