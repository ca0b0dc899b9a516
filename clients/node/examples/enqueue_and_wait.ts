// Asks for a thumbnail and waits for whichever worker makes it: a
// TypeScript Worker (worker.ts), `delayq work`, or a C++ program.
//
//   tsc -p clients/node/examples && node clients/node/dist-examples/enqueue_and_wait.js

import { AlreadyExistsError, Client } from "delayq";

async function main(): Promise<void> {
  const client = new Client({ url: "http://127.0.0.1:7070" });
  const id = "thumb-cat.jpg";
  try {
    // Kept an hour once done, with the worker's result.
    await client.enqueue("thumbs", "cat.jpg", { id, keepForMs: 3_600_000, ttrMs: 30_000 });
  } catch (error) {
    if (!(error instanceof AlreadyExistsError)) throw error;
    // Asked for before: wait for that one.
  }
  const job = await client.get(id, { waitMs: 30_000 });
  if (job.state === "done") {
    console.log(`${id}: ${typeof job.result === "string" ? job.result : `${job.result?.length ?? 0} bytes`}`);
  } else {
    console.log(`${id} is ${job.state} after ${job.attempts} attempts; last error: ${job.lastError || "-"}`);
  }
}

main().catch((error) => {
  console.error(error);
  throw error;
});
