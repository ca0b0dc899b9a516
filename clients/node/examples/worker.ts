// Makes thumbnails: a worker for the topic "thumbs", four at a time, until
// SIGINT or SIGTERM. Jobs may come from TypeScript (enqueue_and_wait.ts),
// from `delayq add thumbs cat.jpg --keep-for 1h`, or from C++.
//
//   tsc -p clients/node/examples && node clients/node/dist-examples/worker.js

import { Client, Worker } from "delayq";
import type { Lease } from "delayq";

async function thumbnail(lease: Lease, signal: AbortSignal): Promise<string> {
  if (typeof lease.payload !== "string") throw new Error("expected a file name");
  // The real work would go here; a long one is fine, the lease is touched.
  await new Promise((resolve) => setTimeout(resolve, 100));
  if (signal.aborted) throw new Error("stopped");
  return lease.payload.replace(/\.jpg$/, "-128.jpg");
}

const worker = new Worker({
  client: new Client({ url: "http://127.0.0.1:7070" }),
  topic: "thumbs",
  concurrency: 4,
  handler: (lease, { signal }) => thumbnail(lease, signal),
  onError: (error, lease) => console.error(`thumbs ${lease?.id ?? ""}:`, error),
});

worker.runUntilSignal({ graceMs: 30_000 }).then((signal) => console.log(`stopped on ${signal}`));
