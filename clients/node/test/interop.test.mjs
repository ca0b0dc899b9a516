// The client and delayq's own programs on one store: jobs enqueued from
// TypeScript and worked by `delayq work`, and jobs added by `delayq add`
// and worked by a TypeScript Worker (the README's example).

import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

import { Worker } from "../dist/index.js";
import { delayqBinary, forEachStore, unique } from "./servers.mjs";

const run = promisify(execFile);

forEachStore((env) => {
  test("enqueued from TypeScript, worked by `delayq work`", async () => {
    const topic = unique("thumbs");
    const id = await env.client.enqueue(topic, "cat.jpg", { keepForMs: 60_000 });
    await run(delayqBinary(), ["work", topic, "--store", env.storeUrl, "--once", "--result", "--",
      "sh", "-c", "tr a-z A-Z"], { timeout: 30_000 });
    const job = await env.client.get(id, { waitMs: 10_000 });
    assert.equal(job.state, "done");
    assert.equal(job.result, "CAT.JPG");
  });

  test("added by `delayq add`, worked by a TypeScript Worker", async () => {
    const topic = unique("mail");
    const { stdout } = await run(delayqBinary(), ["add", topic, "hello", "--store", env.storeUrl,
      "--keep-for", "1m"], { timeout: 30_000 });
    const id = stdout.trim();
    const worker = new Worker({
      client: env.client, topic, waitMs: 1_000,
      handler: (lease) => `${lease.payload} from TypeScript`,
    });
    worker.start();
    try {
      assert.equal((await env.client.get(id, { waitMs: 10_000 })).state, "done");
    } finally {
      await worker.stop();
    }
    const shown = await run(delayqBinary(), ["get", id, "--json", "--store", env.storeUrl], { timeout: 30_000 });
    const job = JSON.parse(shown.stdout);
    assert.equal(job.state, "done");
    assert.equal(job.result, "hello from TypeScript");
  });
});
