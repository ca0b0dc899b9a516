// delayq's client for Node 18+: the HTTP/JSON API of `delayq serve`
// (docs/openapi.yaml) and a worker that runs a handler for each job.
//
//   import { Client, Worker } from "delayq";
//   const client = new Client({ url: "http://127.0.0.1:7070" });
//   const id = await client.enqueue("mail", JSON.stringify({ to: "ann@example.com" }), { delayMs: 30_000 });
//   const worker = new Worker({ client, topic: "mail", handler: async (lease) => send(lease.payload) });
//   await worker.runUntilSignal();

export { Client } from "./client";
export type { AckAndReserveResult, AckManyResult, BulkAction, BulkResult, ClientOptions } from "./client";
export { Worker, defaultWorkerName } from "./worker";
export type { Handler, HandlerContext, WorkerOptions } from "./worker";
export {
  AlreadyExistsError,
  CancelledError,
  ConnectionError,
  DataLossError,
  DeadlineExceededError,
  DelayqError,
  FailedPreconditionError,
  InternalError,
  UnimplementedError,
  InvalidArgumentError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  TimeoutError,
  UnauthenticatedError,
  UnavailableError,
} from "./errors";
export type {
  Bytes,
  CountMinute,
  Counts,
  FlowJob,
  HeldLease,
  HistoryEvent,
  Job,
  JobOptions,
  JobPage,
  JobState,
  Lease,
  LeaseRef,
  Limit,
  LimitSpec,
  Schedule,
  ScheduleSpec,
  TopicStats,
  WorkersPage,
} from "./types";
