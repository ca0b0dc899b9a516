// Worker: runs a handler for each job of one topic.
//
// One loop long-polls reserve for as many jobs as there are free handler
// slots (`concurrency`), so an idle worker holds one request open and a
// busy one asks for nothing: the ack of each job also takes the next ready
// one for its slot (ackAndReserve), one request per job. Each job's handler runs as its own promise;
// while it runs, the lease is touched every `touchFraction` of the job's
// ttr, so a handler may run longer than the ttr without the job going to
// another worker. The handler's return value (text or bytes, optional) is
// the ack's result; a thrown error fails the job with its message, and the
// job runs again after its backoff or goes dead on its last attempt.
//
// stop() stops reserving and waits for the running handlers. A reserve in
// flight when stop() is called is not aborted (aborting it could lose the
// reply after the server leased the jobs): the worker waits for its answer,
// at most `waitMs`, and releases what it brought, so those jobs go back to
// ready at once with no attempt spent. A handler still running when
// `graceMs` is over is told so through its AbortSignal and is no longer
// touched: if it does not finish, its lease runs out and the job comes back
// after its ttr. Either way no reserved job is left unprocessed.

import type { Client } from "./client";
import { FailedPreconditionError, NotFoundError } from "./errors";
import type { Bytes, Lease } from "./types";

/** What a handler gets beside its lease. */
export interface HandlerContext {
  /**
   * Aborted when the worker stops waiting for this handler (stop()'s grace
   * ran out) or the lease was lost (a touch was refused): stop early if you can.
   */
  signal: AbortSignal;
}

/** Runs one job; the value it returns (text or bytes) is the ack's result. */
export type Handler = (
  lease: Lease,
  context: HandlerContext,
) => Promise<Bytes | void | null | undefined> | Bytes | void | null | undefined;

export interface WorkerOptions {
  client: Client;
  topic: string;
  handler: Handler;
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /** How long one reserve waits for a job (default 5000 ms; the server caps it, 30 s by default). */
  waitMs?: number;
  /** Touch a running job's lease every this fraction of its ttr (default 0.5). */
  touchFraction?: number;
  /** Told of what went wrong and was not the handler's doing (default: console.error). */
  onError?: (error: unknown, lease?: Lease) => void;
  /** Who holds the leases, as the server's workers view shows it (default: defaultWorkerName()). */
  name?: string;
}

// Node's require, without its type package.
declare const require: (module: string) => any;

/**
 * "host:pid", as the server takes a worker's name: printable ASCII without
 * spaces, at most 128 characters.
 */
export function defaultWorkerName(): string {
  let host = "";
  try {
    host = String(require("os").hostname());
  } catch {
    // Not on Node: the name says so.
  }
  host = host.replace(/[^!-~]/g, "_").slice(0, 100) || "host";
  return `${host}:${(globalThis as any).process?.pid ?? 0}`;
}

interface Running {
  lease: Lease;
  controller: AbortController;
  done: Promise<void>;
  touchTimer?: ReturnType<typeof setTimeout>;
}

function message(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

export class Worker {
  private readonly client: Client;
  private readonly topic: string;
  private readonly handler: Handler;
  private readonly concurrency: number;
  private readonly waitMs: number;
  private readonly touchFraction: number;
  private readonly onError: (error: unknown, lease?: Lease) => void;
  /** Who holds this worker's leases. */
  readonly name: string;

  private readonly running = new Set<Running>();
  private loopDone: Promise<void> | null = null;
  private stopDone: Promise<void> | null = null;
  private stopping = false;
  private wake: (() => void) | null = null;
  // runUntilSignal()'s wait, ended by a stop() called meanwhile.
  private stopCalled: (() => void) | null = null;

  constructor(options: WorkerOptions) {
    this.client = options.client;
    this.topic = options.topic;
    this.handler = options.handler;
    this.concurrency = options.concurrency ?? 1;
    this.waitMs = options.waitMs ?? 5_000;
    this.touchFraction = options.touchFraction ?? 0.5;
    this.name = options.name ?? defaultWorkerName();
    this.onError = options.onError ?? ((error, lease) => console.error(`delayq worker ${lease ? lease.id + ": " : ""}`, error));
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) {
      throw new RangeError("concurrency must be a whole number of at least 1");
    }
    if (!(this.touchFraction > 0 && this.touchFraction < 1)) {
      throw new RangeError("touchFraction must be between 0 and 1");
    }
  }

  /** Handlers running now. */
  get active(): number {
    return this.running.size;
  }

  /** Starts taking jobs. */
  start(): void {
    if (this.loopDone) throw new Error("worker already started");
    this.stopping = false;
    this.loopDone = this.loop();
  }

  /**
   * Stops taking jobs and waits for the running handlers, at most `graceMs`
   * (default: as long as they take). Jobs a reserve in flight brings are
   * released. Resolves once the worker holds no lease it still tends.
   */
  stop(options: { graceMs?: number } = {}): Promise<void> {
    if (!this.loopDone) return Promise.resolve();
    if (!this.stopDone) {
      const called = this.stopCalled;
      this.stopCalled = null;
      if (called) called();
      this.stopDone = this.drain(options.graceMs ?? Infinity).finally(() => {
        this.stopDone = null;
        this.loopDone = null;
      });
    }
    return this.stopDone;
  }

  private async drain(graceMs: number): Promise<void> {
    this.stopping = true;
    this.poke();
    await this.loopDone;
    const handlers = Promise.all([...this.running].map((r) => r.done));
    if (graceMs === Infinity) {
      await handlers;
    } else {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const late = new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      });
      const overdue = await Promise.race([handlers.then(() => false), late]);
      clearTimeout(timer);
      if (overdue) {
        for (const r of this.running) this.abandon(r, new Error("the worker stopped"));
      }
    }
  }

  /**
   * Starts, runs until the process gets one of `signals` (default SIGINT and
   * SIGTERM), then stops as stop() does; resolves with the signal's name
   * (or "stop" when stop() was called instead). A second signal finds no
   * handler of the worker's and ends the process as usual (leases then run
   * out and their jobs come back after their ttr).
   */
  async runUntilSignal(options: { signals?: string[]; graceMs?: number } = {}): Promise<string> {
    const proc = (globalThis as any).process;
    if (!proc || typeof proc.on !== "function") throw new Error("runUntilSignal needs Node's process");
    const signals = options.signals ?? ["SIGINT", "SIGTERM"];
    this.start();
    const received = await new Promise<string>((resolve) => {
      const listeners = new Map<string, () => void>();
      const end = (why: string) => {
        for (const [s, l] of listeners) proc.off(s, l);
        this.stopCalled = null;
        resolve(why);
      };
      for (const signal of signals) {
        const listener = () => end(signal);
        listeners.set(signal, listener);
        proc.on(signal, listener);
      }
      this.stopCalled = () => end("stop");
    });
    await this.stop({ graceMs: options.graceMs });
    return received;
  }

  // Wakes the loop from waiting for a free slot or after an error.
  private poke(): void {
    const wake = this.wake;
    this.wake = null;
    if (wake) wake();
  }

  private idle(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.wake = null;
        resolve();
      }, ms);
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopping) {
      const free = this.concurrency - this.running.size;
      if (free <= 0) {
        await this.idle(60_000);
        continue;
      }
      let leases: Lease[];
      try {
        // The API leases at most 1000 jobs a call.
        leases = await this.client.reserve(this.topic, {
          waitMs: this.waitMs,
          max: Math.min(free, 1000),
          worker: this.name,
        });
        failures = 0;
      } catch (error) {
        this.onError(error);
        failures++;
        await this.idle(Math.min(5_000, 100 * 2 ** failures));
        continue;
      }
      if (this.stopping) {
        // Jobs leased after stop() was called go back at once, no attempt spent.
        await Promise.all(
          leases.map((lease) => this.client.release(lease).catch((error) => this.onError(error, lease))),
        );
        break;
      }
      for (const lease of leases) this.run(lease);
    }
  }

  private run(lease: Lease): void {
    const entry = { lease, controller: new AbortController() } as Running;
    this.running.add(entry);
    this.keepAlive(entry);
    entry.done = this.handle(entry).finally(() => {
      this.stopTouching(entry);
      this.running.delete(entry);
      this.poke();
    });
  }

  private async handle(entry: Running): Promise<void> {
    const { lease, controller } = entry;
    let result: unknown;
    try {
      result = await this.handler(lease, { signal: controller.signal });
    } catch (error) {
      this.stopTouching(entry);
      await this.client.fail(lease, message(error)).catch((e) => this.onError(e, lease));
      return;
    }
    this.stopTouching(entry);
    if (result !== undefined && result !== null && typeof result !== "string" && !(result instanceof Uint8Array)) {
      const what = `the handler returned ${typeof result}, not a string or Uint8Array`;
      await this.client.fail(lease, what).catch((e) => this.onError(e, lease));
      return;
    }
    await this.finish(lease, (result ?? undefined) as Bytes | undefined);
  }

  // Acks a job whose handler succeeded. While the worker runs, the ack also
  // takes the next ready job for the slot it frees, in the same request (one
  // request per job while busy; with nothing ready the loop's long poll
  // waits for the next).
  private async finish(lease: Lease, result: Bytes | undefined): Promise<void> {
    if (this.stopping) {
      await this.client.ack(lease, result).catch((e) => this.onError(e, lease));
      return;
    }
    let step;
    try {
      step = await this.client.ackAndReserve(lease, this.topic, { result, worker: this.name });
    } catch (error) {
      // The reply was lost: the plain ack, which the client repeats, is
      // refused as stale when the first one took; a next job the lost reply
      // held comes back after its ttr.
      await this.client.ack(lease, result).catch((e) => {
        if (!(e instanceof FailedPreconditionError)) this.onError(e, lease);
      });
      return;
    }
    if (step.ackError) this.onError(step.ackError, lease);
    if (step.reserveError) this.onError(step.reserveError);
    const next = step.lease;
    if (next === undefined) return;
    if (this.stopping) {
      // Taken after stop() was called: back at once, no attempt spent.
      await this.client.release(next).catch((e) => this.onError(e, next));
    } else {
      this.run(next);
    }
  }

  // Touches the lease every touchFraction of its ttr until the handler ends.
  private keepAlive(entry: Running): void {
    const every = Math.max(10, entry.lease.ttrMs * this.touchFraction);
    entry.touchTimer = setTimeout(async () => {
      if (entry.touchTimer === undefined) return;
      try {
        await this.client.touch(entry.lease);
      } catch (error) {
        if (error instanceof FailedPreconditionError || error instanceof NotFoundError) {
          // The lease is gone (it ran out, or the job was cancelled): the
          // handler's work may be done twice; tell it.
          this.abandon(entry, error);
          return;
        }
        this.onError(error, entry.lease);
      }
      if (entry.touchTimer !== undefined) this.keepAlive(entry);
    }, every);
  }

  private stopTouching(entry: Running): void {
    if (entry.touchTimer !== undefined) clearTimeout(entry.touchTimer);
    entry.touchTimer = undefined;
  }

  private abandon(entry: Running, reason: unknown): void {
    this.stopTouching(entry);
    if (!entry.controller.signal.aborted) entry.controller.abort(reason);
  }
}
