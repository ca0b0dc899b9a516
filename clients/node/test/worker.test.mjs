// Worker against a real `delayq serve` on SQLite and on Redis: results,
// failures, heartbeats past the ttr, concurrency, and stopping without
// losing a job (also by SIGTERM, in a process of its own).

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";

import { Worker, defaultWorkerName } from "../dist/index.js";
import { eventually, forEachStore, sleep, unique } from "./servers.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

forEachStore((env) => {
  test("acks with the handler's result, read back with get", async () => {
    const client = env.client;
    const topic = unique("thumbs");
    const worker = new Worker({
      client, topic, waitMs: 1_000,
      handler: async (lease) => `${lease.payload}-128.jpg (attempt ${lease.attempt}/${lease.maxAttempts})`,
    });
    worker.start();
    try {
      const id = await client.enqueue(topic, "cat", { keepForMs: 60_000 });
      const bytesId = await client.enqueue(topic, "dog", { keepForMs: 60_000 });
      const job = await client.get(id, { waitMs: 10_000 });
      assert.equal(job.state, "done");
      assert.equal(job.result, "cat-128.jpg (attempt 1/3)");
      assert.equal((await client.get(bytesId, { waitMs: 10_000 })).result, "dog-128.jpg (attempt 1/3)");
    } finally {
      await worker.stop();
    }
  });

  test("the worker's leases are held under its name", async () => {
    const client = env.client;
    const topic = unique("named");
    const holders = [];
    const worker = new Worker({
      client, topic, waitMs: 1_000, name: "node-worker:7",
      handler: async (lease) => {
        const page = await client.workers({ limit: 1000 });
        holders.push(page.leases.find((l) => l.id === lease.id)?.holder);
      },
    });
    worker.start();
    try {
      const id = await client.enqueue(topic, "x", { keepForMs: 60_000 });
      assert.equal((await client.get(id, { waitMs: 10_000 })).state, "done");
    } finally {
      await worker.stop();
    }
    assert.deepEqual(holders, ["node-worker:7"]);
    assert.match(defaultWorkerName(), /^[!-~]{1,128}$/);
  });

  test("while busy, each ack brings the next job: one request per job", async () => {
    const client = env.client;
    const topic = unique("chained");
    const reserves = async () => {
      const key = 'delayq_http_requests_total{route="/v1/topics/{}/reserve",method="POST",code="200"} ';
      const line = (await client.metrics()).split("\n").find((l) => l.startsWith(key));
      return line === undefined ? 0 : Number(line.slice(key.length));
    };
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push(await client.enqueue(topic, String(i), { keepForMs: 60_000 }));
    const seen = [];
    const worker = new Worker({
      client, topic, waitMs: 1_000,
      handler: async () => { seen.push(await reserves()); },
    });
    worker.start();
    try {
      for (const id of ids) assert.equal((await client.get(id, { waitMs: 10_000 })).state, "done");
    } finally {
      await worker.stop();
    }
    // One reserve brought the first job (the test's other workers may have
    // reserved before it); each ack brought the next.
    assert.equal(seen.length, 5);
    assert.equal(new Set(seen).size, 1, String(seen));
  });

  test("bytes results and no result", async () => {
    const client = env.client;
    const topic = unique("results");
    const worker = new Worker({
      client, topic, waitMs: 1_000,
      handler: (lease) => (lease.payload === "bytes" ? new Uint8Array([1, 2, 255]) : undefined),
    });
    worker.start();
    try {
      const a = await client.enqueue(topic, "bytes", { keepForMs: 60_000 });
      const b = await client.enqueue(topic, "none", { keepForMs: 60_000 });
      assert.deepEqual([...(await client.get(a, { waitMs: 10_000 })).result], [1, 2, 255]);
      const none = await client.get(b, { waitMs: 10_000 });
      assert.equal(none.state, "done");
      assert.equal(none.result ?? "", "");
    } finally {
      await worker.stop();
    }
  });

  test("fails with the thrown error's message", async () => {
    const client = env.client;
    const topic = unique("mail");
    const seen = [];
    const worker = new Worker({
      client, topic, waitMs: 1_000,
      handler: async (lease) => {
        seen.push(lease.attempt);
        throw new Error(`smtp: 550 mailbox unavailable (attempt ${lease.attempt})`);
      },
    });
    worker.start();
    try {
      const id = await client.enqueue(topic, "to bob", { maxAttempts: 2, backoff: "fixed:100ms" });
      const job = await client.get(id, { waitMs: 15_000 });
      assert.equal(job.state, "dead");
      assert.equal(job.lastError, "smtp: 550 mailbox unavailable (attempt 2)");
      assert.deepEqual(seen, [1, 2]);
      const events = (await client.history(id)).filter((e) => e.event === "failed");
      assert.equal(events[0].error, "smtp: 550 mailbox unavailable (attempt 1)");
    } finally {
      await worker.stop();
    }
  });

  test("touch keeps a lease alive past its ttr", async () => {
    const client = env.client;
    const topic = unique("long");
    let runs = 0;
    const worker = new Worker({
      client, topic, waitMs: 1_000, touchFraction: 0.2,
      handler: async () => {
        runs += 1;
        await sleep(4_000);
        return "finished";
      },
    });
    worker.start();
    try {
      const id = await client.enqueue(topic, "x", { ttrMs: 1_500, keepForMs: 60_000 });
      await eventually(async () => (await client.get(id)).state === "reserved", 5_000, "the job to be reserved");
      // Past the ttr of 1.5 s the job is still reserved, and no other worker gets it.
      await sleep(2_500);
      const job = await client.get(id);
      assert.equal(job.state, "reserved");
      assert.deepEqual(await client.reserve(topic), []);
      const done = await client.get(id, { waitMs: 10_000 });
      assert.equal(done.state, "done");
      assert.equal(done.result, "finished");
      assert.equal(done.attempts, 1);
      assert.equal(runs, 1);
    } finally {
      await worker.stop();
    }
  });

  test("runs up to `concurrency` handlers at once", async () => {
    const client = env.client;
    const topic = unique("parallel");
    let running = 0;
    let most = 0;
    let release;
    const allStarted = new Promise((r) => { release = r; });
    const worker = new Worker({
      client, topic, concurrency: 3, waitMs: 1_000,
      handler: async () => {
        running += 1;
        most = Math.max(most, running);
        if (running === 3) release();
        await allStarted;
        await sleep(50);
        running -= 1;
      },
    });
    worker.start();
    try {
      const ids = await client.enqueueBatch(topic, ["1", "2", "3", "4", "5"], { keepForMs: 60_000 });
      for (const id of ids) assert.equal((await client.get(id, { waitMs: 10_000 })).state, "done");
      assert.equal(most, 3);
    } finally {
      await worker.stop();
    }
  });

  test("stop waits for running handlers, and they ack", async () => {
    const client = env.client;
    const topic = unique("graceful");
    let started = 0;
    const worker = new Worker({
      client, topic, concurrency: 2, waitMs: 1_000,
      handler: async (lease) => {
        started += 1;
        await sleep(700);
        return `done ${lease.payload}`;
      },
    });
    worker.start();
    const ids = await client.enqueueBatch(topic, ["a", "b"], { keepForMs: 60_000 });
    await eventually(() => started === 2, 5_000, "both handlers to start");
    await worker.stop();
    assert.equal(worker.active, 0);
    for (const id of ids) {
      const job = await client.get(id);
      assert.equal(job.state, "done");
      assert.match(job.result, /^done [ab]$/);
    }
  });

  test("a stop during a long poll releases the job the poll brings", async () => {
    const client = env.client;
    const topic = unique("poll");
    let runs = 0;
    const worker = new Worker({ client, topic, waitMs: 4_000, handler: () => { runs += 1; } });
    worker.start();
    await sleep(300); // the worker's reserve is waiting now
    const stopped = worker.stop();
    const id = await client.enqueue(topic, "x", { keepForMs: 60_000 });
    await stopped;
    const job = await client.get(id);
    assert.equal(runs, 0);
    assert.equal(job.state, "ready");
    assert.equal((await client.stats(topic)).reserved, 0);
    // It is there for the next worker.
    const [lease] = await client.reserve(topic, { waitMs: 1_000 });
    assert.equal(lease.id, id);
    await client.ack(lease);
  });

  test("when the grace runs out, the handler's signal says so", async () => {
    const client = env.client;
    const topic = unique("stuck");
    let aborted;
    let started = false;
    const worker = new Worker({
      client, topic, waitMs: 1_000,
      handler: (lease, { signal }) => new Promise((resolve, reject) => {
        started = true;
        signal.addEventListener("abort", () => {
          aborted = signal.reason;
          reject(new Error("gave up"));
        });
      }),
    });
    worker.start();
    const id = await client.enqueue(topic, "x", { maxAttempts: 5 });
    // Not the job's state: the store has it reserved before the worker has its lease.
    await eventually(() => started, 5_000, "the handler to start");
    const stopping = Date.now();
    await worker.stop({ graceMs: 200 });
    assert.ok(Date.now() - stopping < 2_000);
    assert.ok(aborted instanceof Error);
    // The handler's rejection then fails the job: it runs again later.
    const job = await eventually(async () => {
      const j = await client.get(id);
      return j.state !== "reserved" ? j : null;
    }, 5_000, "the job to be failed");
    assert.equal(job.lastError, "gave up");
  });

  test("runUntilSignal also ends when stop() is called", async () => {
    const worker = new Worker({ client: env.client, topic: unique("idle"), waitMs: 500, handler: () => {} });
    const running = worker.runUntilSignal();
    await sleep(100);
    await worker.stop();
    assert.equal(await running, "stop");
    assert.equal(process.listenerCount("SIGTERM"), 0);
  });

  test("SIGTERM stops a worker process gracefully, its job done", async () => {
    const client = env.client;
    const topic = unique("signal");
    const child = spawn(process.execPath, [path.join(here, "fixtures", "signal_worker.mjs"), env.url, topic],
      { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => { out += d; });
    const exit = new Promise((r) => child.on("exit", (code, signal) => r({ code, signal })));
    try {
      await eventually(() => out.includes("ready"), 10_000, "the worker process");
      const id = await client.enqueue(topic, "x", { keepForMs: 60_000 });
      await eventually(() => out.includes(`started ${id}`), 10_000, "the handler to start");
      child.kill("SIGTERM");
      assert.deepEqual(await exit, { code: 0, signal: null });
      assert.match(out, /stopped SIGTERM/);
      const job = await client.get(id);
      assert.equal(job.state, "done");
      assert.equal(job.result, "ok");
    } finally {
      child.kill("SIGKILL");
    }
  });
});
