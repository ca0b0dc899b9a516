// Every route of the API through Client, against a real `delayq serve` on
// SQLite and on Redis, and the typed errors it answers with.

import assert from "node:assert/strict";
import { test } from "node:test";

import {
  AlreadyExistsError,
  DelayqError,
  FailedPreconditionError,
  InvalidArgumentError,
  NotFoundError,
} from "../dist/index.js";
import { eventually, forEachStore, unique } from "./servers.mjs";

forEachStore((env) => {
  test("enqueue, get and cancel a text job with every option", async () => {
    const client = env.client;
    const topic = unique("orders");
    const id = unique("order");
    const runAt = new Date(Date.now() + 3_600_000);
    assert.equal(
      await client.enqueue(topic, "42", {
        id, runAt, priority: 5, ttrMs: 5_000, maxAttempts: 7, backoff: "fixed:2s",
        keepForMs: 60_000, keepAtMost: 10, expireAt: new Date("2099-01-02T03:04:05Z"),
        discardExpired: true, uniqueForMs: 60_000,
      }),
      id,
    );
    const job = await client.get(id);
    assert.equal(job.id, id);
    assert.equal(job.topic, topic);
    assert.equal(job.state, "delayed");
    assert.equal(job.payload, "42");
    assert.equal(job.priority, 5);
    assert.equal(job.ttrMs, 5_000);
    assert.equal(job.maxAttempts, 7);
    assert.equal(job.backoff, "fixed:2s");
    assert.equal(job.keepForMs, 60_000);
    assert.equal(job.keepAtMost, 10);
    assert.equal(job.expireAt.toISOString(), "2099-01-02T03:04:05.000Z");
    assert.equal(job.discardExpired, true);
    assert.equal(job.uniqueForMs, 60_000);
    assert.equal(job.attempts, 0);
    assert.ok(job.enqueuedAt instanceof Date);
    assert.equal(job.runAt.getTime(), runAt.getTime());
    assert.equal(job.deadline, null);
    await client.cancel(id);
    await assert.rejects(client.get(id), NotFoundError);
    // Its dedup window holds the id.
    await assert.rejects(client.enqueue(topic, "again", { id }), AlreadyExistsError);
    // An expiry relative to enqueue.
    const soon = await client.enqueue(topic, "x", { expireAfterMs: 600_000 });
    assert.ok((await client.get(soon)).expireAt instanceof Date);
  });

  test("bytes payloads travel as bytes, text as text", async () => {
    const client = env.client;
    const topic = unique("bytes");
    const bytes = new Uint8Array([0, 255, 1, 128]);
    const id = await client.enqueue(topic, bytes, { delayMs: 0 });
    const job = await client.get(id);
    assert.ok(job.payload instanceof Uint8Array);
    assert.deepEqual([...job.payload], [0, 255, 1, 128]);
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    assert.deepEqual([...lease.payload], [0, 255, 1, 128]);
    await client.ack(lease);
    const textId = await client.enqueue(topic, "héllo ✓");
    assert.equal((await client.get(textId)).payload, "héllo ✓");
  });

  test("enqueueBatch: text and bytes; list in order", async () => {
    const client = env.client;
    const topic = unique("batch");
    const ids = await client.enqueueBatch(topic, ["a", "b", "c"], { priority: 1 });
    assert.equal(ids.length, 3);
    const mixed = await client.enqueueBatch(topic, ["d", new Uint8Array([0xff])], { priority: 2 });
    assert.equal(mixed.length, 2);
    const jobs = await client.list(topic, { state: "ready", limit: 10 });
    assert.deepEqual(jobs.map((j) => j.id), [...ids, ...mixed]);
    assert.equal(jobs[3].payload, "d");
    assert.deepEqual([...jobs[4].payload], [0xff]);
    assert.equal((await client.list(topic, { limit: 2 })).length, 2);
    assert.deepEqual(await client.list(topic, { state: "dead" }), []);
  });

  test("workers: a live lease with its holder", async () => {
    const client = env.client;
    const topic = unique("held");
    const id = await client.enqueue(topic, "x");
    const [lease] = await client.reserve(topic, { waitMs: 2_000, worker: "node-test:1" });
    let found;
    let cursor = "";
    do {
      const page = await client.workers({ limit: 1000, cursor });
      found = found ?? page.leases.find((l) => l.id === id);
      cursor = page.nextCursor;
    } while (cursor !== "");
    assert.ok(found);
    assert.equal(found.topic, topic);
    assert.equal(found.holder, "node-test:1");
    assert.ok(found.reservedAt instanceof Date);
    await client.ack(lease);
  });

  test("listPage: pages follow their cursor; a bad cursor is refused", async () => {
    const client = env.client;
    const topic = unique("pages");
    const ids = await client.enqueueBatch(topic, ["a", "b", "c", "d", "e"]);
    const seen = [];
    let cursor = "";
    let pages = 0;
    do {
      const page = await client.listPage(topic, { state: "ready", limit: 2, cursor });
      seen.push(...page.jobs.map((j) => j.id));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor !== "" && pages < 10);
    assert.equal(pages, 3);
    assert.deepEqual(seen, ids);
    await assert.rejects(client.listPage(topic, { cursor: "nonsense" }), InvalidArgumentError);
  });

  test("a lease carries the results its dependencies left", async () => {
    const client = env.client;
    const dep = await client.enqueue(unique("render"), "page", { keepForMs: 60_000 });
    const topic = unique("mail");
    const child = await client.enqueue(topic, "send", { after: [dep] });
    const waiting = await client.get(child);
    assert.equal(waiting.state, "waiting");
    assert.deepEqual(waiting.after, [dep]);
    assert.equal((await client.get(dep)).after, undefined);
    const [depLease] = await client.reserve((await client.get(dep)).topic, { waitMs: 2_000 });
    await client.ack(depLease, "pdf");
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    assert.equal(lease.id, child);
    assert.deepEqual(lease.job.after, [dep]);
    assert.deepEqual([...lease.dependencyResults], [[dep, "pdf"]]);
  });

  test("reserve, touch, release, ack with a result kept and waited for", async () => {
    const client = env.client;
    const topic = unique("thumbs");
    const id = await client.enqueue(topic, "cat.jpg", { id: unique("thumb"), keepForMs: 60_000, ttrMs: 10_000 });
    let [lease] = await client.reserve(topic, { waitMs: 2_000 });
    assert.equal(lease.id, id);
    assert.equal(lease.topic, topic);
    assert.equal(lease.attempt, 1);
    assert.equal(lease.maxAttempts, 3);
    assert.equal(lease.ttrMs, 10_000);
    assert.equal(typeof lease.token, "string");
    assert.ok(lease.deadline instanceof Date);
    assert.equal(lease.job.state, "reserved");

    const before = lease.deadline.getTime();
    await new Promise((r) => setTimeout(r, 20));
    const deadline = await client.touch(lease);
    assert.ok(deadline.getTime() > before);
    assert.equal(lease.deadline.getTime(), deadline.getTime());

    await client.release(lease, { delayMs: 0 });
    assert.equal((await client.get(id)).state, "ready");
    await assert.rejects(client.ack(lease), FailedPreconditionError);

    [lease] = await client.reserve(topic, { waitMs: 2_000 });
    const waiting = client.get(id, { waitMs: 10_000 });
    await client.ack(lease, "cat-128.jpg");
    const done = await waiting;
    assert.equal(done.state, "done");
    assert.equal(done.result, "cat-128.jpg");
    assert.ok(done.finishedAt instanceof Date);

    const events = await client.history(id);
    assert.deepEqual(
      events.map((e) => e.event).filter((e) => e !== "promoted"),
      ["enqueued", "reserved", "reserved", "succeeded"],
    );
    assert.ok(events[0].at instanceof Date);
  });

  test("a bytes result comes back as bytes", async () => {
    const client = env.client;
    const topic = unique("result");
    const id = await client.enqueue(topic, "x", { keepForMs: 60_000 });
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.ack(lease, new Uint8Array([0xc3, 0x28]));
    const job = await client.get(id);
    assert.deepEqual([...job.result], [0xc3, 0x28]);
  });

  test("get waits for a job to finish, else answers it as it is", async () => {
    const client = env.client;
    const id = await client.enqueue(unique("slow"), "x", { delayMs: 60_000 });
    const started = Date.now();
    const job = await client.get(id, { waitMs: 300 });
    assert.equal(job.state, "delayed");
    assert.ok(Date.now() - started >= 250);
  });

  test("ackAndReserve acks and takes the next job in one request", async () => {
    const client = env.client;
    const topic = unique("chain");
    const first = await client.enqueue(topic, "1");
    const second = await client.enqueue(topic, "2");
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    assert.equal(lease.id, first);
    const step = await client.ackAndReserve(lease, topic);
    assert.equal(step.acked, true);
    assert.equal(step.ackError, undefined);
    assert.equal(step.lease.id, second);
    const stale = await client.ackAndReserve(lease, topic);
    assert.equal(stale.acked, false);
    assert.ok(stale.ackError instanceof FailedPreconditionError);
    assert.equal(stale.lease, undefined);
    const last = await client.ackAndReserve(step.lease, topic, { waitMs: 0 });
    assert.equal(last.acked, true);
    assert.equal(last.lease, undefined);
    assert.equal((await client.stats(topic)).reserved, 0);
  });

  test("ackMany acks each lease on its own terms", async () => {
    const client = env.client;
    const topic = unique("many");
    await client.enqueueBatch(topic, ["1", "2", "3"]);
    const leases = await client.reserve(topic, { waitMs: 2_000, max: 3 });
    assert.equal(leases.length, 3);
    const stale = { id: leases[2].id, token: String(BigInt(leases[2].token) + 1000n) };
    const outcome = await client.ackMany([leases[0], leases[1], stale]);
    assert.equal(outcome.acked, 2);
    assert.equal(outcome.errors.length, 1);
    assert.equal(outcome.errors[0].id, leases[2].id);
    assert.ok(outcome.errors[0].error instanceof FailedPreconditionError);
    assert.equal(outcome.errors[0].error.code, "FAILED_PRECONDITION");
    await client.ack(leases[2]);
    assert.equal((await client.stats(topic)).reserved, 0);
  });

  test("fail, dead, retry, kick, purge and promote", async () => {
    const client = env.client;
    const topic = unique("mail");
    const id = await client.enqueue(topic, "to bob", { maxAttempts: 1 });
    let [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.fail(lease, "smtp: 550 mailbox unavailable");
    let job = await client.get(id);
    assert.equal(job.state, "dead");
    assert.equal(job.lastError, "smtp: 550 mailbox unavailable");
    assert.ok(job.finishedAt instanceof Date);
    assert.equal((await client.stats(topic)).dead, 1);

    await client.retry(id);
    assert.equal((await client.get(id)).state, "ready");
    await assert.rejects(client.retry(id), FailedPreconditionError);

    [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.fail(lease, "again");
    assert.equal(await client.kick(topic, 5), 1);
    [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.fail(lease, "and again");
    assert.equal(await client.kick(topic), 1);
    [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.fail(lease, "for good");
    assert.equal(await client.purge(topic, { max: 10 }), 1);
    await assert.rejects(client.get(id), NotFoundError);
    assert.equal(await client.purge(topic), 0);

    const later = await client.enqueue(topic, "later", { delayMs: 3_600_000 });
    assert.equal((await client.get(later)).state, "delayed");
    await client.promote(later);
    job = await client.get(later);
    assert.equal(job.state, "ready");
    await assert.rejects(client.promote(later), FailedPreconditionError);
  });

  test("a flow is enqueued at once, a parent before its children", async () => {
    const client = env.client;
    const topic = unique("flow");
    const [parent, child] = [unique("parent"), unique("child")];
    const flow = [
      { topic, payload: "publish", id: parent, after: [child], onDependencyFailure: "cancel" },
      { topic, payload: new Uint8Array([0, 1]), id: child },
    ];
    const ids = await client.enqueueFlow(flow);
    assert.deepEqual(ids, [parent, child]);
    assert.equal((await client.get(parent)).state, "waiting");
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    assert.equal(lease.id, child);
    await client.ack(lease);
    const [next] = await client.reserve(topic, { waitMs: 2_000 });
    assert.equal(next.id, parent);
    await assert.rejects(client.enqueueFlow([{ topic, payload: "a", id: "a", after: ["a"] }]), InvalidArgumentError);
  });

  test("bulk promotes, retries and cancels many jobs in one request each", async () => {
    const client = env.client;
    const topic = unique("bulk");
    const later = [];
    for (let i = 0; i < 3; i++) later.push(await client.enqueue(topic, `p${i}`, { delayMs: 3_600_000 }));
    const promoted = await client.bulk("promote", [...later, "no-such-job"]);
    assert.equal(promoted.done, 3);
    assert.equal(promoted.errors.length, 1);
    assert.equal(promoted.errors[0].id, "no-such-job");
    assert.ok(promoted.errors[0].error instanceof NotFoundError);
    assert.equal((await client.stats(topic)).ready, 3);
    const retried = await client.bulk("retry", [later[0]]);
    assert.equal(retried.done, 0);
    assert.ok(retried.errors[0].error instanceof FailedPreconditionError);
    const cancelled = await client.bulk("cancel", later);
    assert.equal(cancelled.done, 3);
    assert.equal((await client.stats(topic)).ready, 0);
  });

  test("fail on an attempt that is not the last schedules a retry", async () => {
    const client = env.client;
    const topic = unique("retry");
    const id = await client.enqueue(topic, "x", { maxAttempts: 3, backoff: "fixed:1h" });
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.fail(lease, new Error("boom"));
    const job = await client.get(id);
    assert.equal(job.state, "delayed");
    assert.equal(job.attempts, 1);
    assert.equal(job.lastError, "boom");
  });

  test("topics, stats, pause and resume", async () => {
    const client = env.client;
    const topic = unique("paused");
    await client.enqueue(topic, "x");
    const paused = await client.pause(topic);
    assert.equal(paused.topic, topic);
    assert.equal(paused.paused, true);
    assert.equal(paused.ready, 1);
    assert.deepEqual(await client.reserve(topic, { waitMs: 100 }), []);
    const listed = (await client.topics()).find((t) => t.topic === topic);
    assert.deepEqual(listed, { topic, delayed: 0, ready: 1, reserved: 0, dead: 0, done: 0, paused: true });
    const resumed = await client.resume(topic);
    assert.equal(resumed.paused, false);
    assert.equal((await client.reserve(topic, { waitMs: 2_000 })).length, 1);
    const stats = await client.stats(topic);
    assert.equal(stats.reserved, 1);
    assert.equal(stats.ready, 0);
  });

  test("counts", async () => {
    const client = env.client;
    const topic = unique("counted");
    await client.enqueue(topic, "x");
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    await client.ack(lease);
    const counts = await eventually(async () => {
      const c = await client.counts({ minutes: 5, topic });
      return c.minutes.some((m) => m.done >= 1) ? c : null;
    }, 10_000, "the ack to be counted");
    assert.ok(counts.now instanceof Date);
    assert.ok(Array.isArray(counts.latenessBoundsMs));
    assert.ok(counts.minutes.every((m) => m.topic === topic));
    assert.equal(counts.minutes.reduce((n, m) => n + m.enqueued, 0), 1);
    assert.ok(counts.minutes[0].minute instanceof Date);
    assert.ok((await client.counts()).minutes.length >= 1);
  });

  test("limits: set, read, list and clear", async () => {
    const client = env.client;
    const topic = unique("limited");
    const limit = await client.setLimit(topic, { rate: 50, periodMs: 1_000, burst: 5, concurrency: 10 });
    assert.deepEqual(limit, { topic, rate: 50, periodMs: 1_000, burst: 5, concurrency: 10, text: limit.text });
    assert.match(limit.text, /50/);
    assert.deepEqual(await client.limit(topic), limit);
    assert.ok((await client.limits()).some((l) => l.topic === topic));
    await client.clearLimit(topic);
    await assert.rejects(client.limit(topic), NotFoundError);
    assert.ok(!(await client.limits()).some((l) => l.topic === topic));
    await assert.rejects(client.setLimit(topic, { rate: 0, concurrency: 0 }), InvalidArgumentError);
  });

  test("schedules: put, read, list and delete", async () => {
    const client = env.client;
    const name = unique("report.nightly");
    const topic = unique("reports");
    const schedule = await client.putSchedule(name, {
      spec: "0 3 * * *", topic, payload: "{}", timeZone: "Europe/Berlin", missed: "once",
      jitterMs: 1_000, priority: 2, ttrMs: 30_000, maxAttempts: 4, backoff: "fixed:5s",
    });
    assert.equal(schedule.name, name);
    assert.equal(schedule.spec, "0 3 * * *");
    assert.equal(schedule.topic, topic);
    assert.equal(schedule.payload, "{}");
    assert.equal(schedule.timeZone, "Europe/Berlin");
    assert.equal(schedule.missed, "once");
    assert.equal(schedule.jitterMs, 1_000);
    assert.equal(schedule.priority, 2);
    assert.equal(schedule.ttrMs, 30_000);
    assert.equal(schedule.maxAttempts, 4);
    assert.equal(schedule.backoff, "fixed:5s");
    assert.ok(schedule.nextRun instanceof Date && schedule.nextRun > new Date());
    assert.equal(typeof schedule.revision, "number");
    assert.equal((await client.schedule(name)).spec, "0 3 * * *");
    assert.ok((await client.schedules()).some((s) => s.name === name));
    const binary = await client.putSchedule(name, { spec: "@daily", topic, payload: new Uint8Array([0xff, 0]) });
    assert.deepEqual([...binary.payload], [0xff, 0]);
    await client.deleteSchedule(name);
    await assert.rejects(client.schedule(name), NotFoundError);
    await assert.rejects(client.deleteSchedule(name), NotFoundError);
    await assert.rejects(client.putSchedule(name, { spec: "not a spec", topic }), InvalidArgumentError);
  });

  test("an occurrence's job, whose id has '@' and ':', is reached by id", async () => {
    const client = env.client;
    const name = unique("tick");
    const topic = unique("ticks");
    await client.putSchedule(name, { spec: "@every 1s", topic, payload: "tick" });
    const [lease] = await eventually(async () => {
      const leases = await client.reserve(topic, { waitMs: 1_000 });
      return leases.length ? leases : null;
    }, 15_000, "an occurrence");
    assert.ok(lease.id.startsWith(`${name}@`));
    assert.equal((await client.get(lease.id)).state, "reserved");
    await client.ack(lease);
    await client.deleteSchedule(name);
  });

  test("typed errors: 404, 409, 400", async () => {
    const client = env.client;
    const topic = unique("errors");
    const missing = unique("missing");
    const notFound = await client.get(missing).catch((e) => e);
    assert.ok(notFound instanceof NotFoundError);
    assert.ok(notFound instanceof DelayqError);
    assert.equal(notFound.status, 404);
    assert.equal(notFound.code, "NOT_FOUND");
    assert.match(notFound.message, new RegExp(missing.replace(/\./g, "\\.")));
    await assert.rejects(client.cancel(missing), NotFoundError);
    await assert.rejects(client.history(missing).then(() => client.retry(missing)), NotFoundError);

    const id = unique("dup");
    await client.enqueue(topic, "1", { id });
    const exists = await client.enqueue(topic, "2", { id }).catch((e) => e);
    assert.ok(exists instanceof AlreadyExistsError);
    assert.equal(exists.status, 409);
    assert.equal(exists.code, "ALREADY_EXISTS");
    await client.enqueue(topic, "3", { id, replace: true, delayMs: 60_000 });
    const replaced = await client.get(id);
    assert.equal(replaced.payload, "3");
    assert.equal(replaced.state, "delayed");

    const bad = await client.enqueue(topic, "x", { maxAttempts: 0 }).catch((e) => e);
    assert.ok(bad instanceof InvalidArgumentError);
    assert.equal(bad.status, 400);
    assert.equal(bad.code, "INVALID_ARGUMENT");
    assert.match(bad.message, /max_attempts/);

    await client.enqueue(topic, "to fence");
    const [lease] = await client.reserve(topic, { waitMs: 2_000 });
    const stale = { id: lease.id, token: String(BigInt(lease.token) + 7n) };
    const refused = await client.fail(stale, "x").catch((e) => e);
    assert.ok(refused instanceof FailedPreconditionError);
    assert.equal(refused.status, 409);
    await assert.rejects(client.touch(stale), FailedPreconditionError);
    await assert.rejects(client.release(stale), FailedPreconditionError);
    await client.ack(lease);
    await assert.rejects(client.enqueue(topic, "x", { delay: 5 }), TypeError);
  });

  test("metrics", async () => {
    const text = await env.client.metrics();
    assert.match(text, /delayq_job_events_total/);
  });
});
