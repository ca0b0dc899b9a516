// What the client sends and how it retries, against a small fake server
// whose answers each test scripts: 503 twice then 200, broken connections,
// slow replies; and the request bodies the options turn into.

import assert from "node:assert/strict";
import http from "node:http";
import { after, before, beforeEach, test } from "node:test";

import {
  Client,
  ConnectionError,
  DelayqError,
  InternalError,
  NotFoundError,
  PermissionDeniedError,
  ResourceExhaustedError,
  TimeoutError,
  UnauthenticatedError,
  UnavailableError,
} from "../dist/index.js";
import { freePort } from "./servers.mjs";

// Each request is recorded and answered by the next scripted answer, or
// by the last one when the script ran out.
let requests = [];
let script = [];
let server;
let url;

function answer(status, body) {
  return (req, res) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(typeof body === "string" ? body : JSON.stringify(body));
  };
}
const unavailable = answer(503, { code: "UNAVAILABLE", message: "store down" });
const hangUp = (req, res) => req.socket.destroy();

before(async () => {
  server = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => { body += d; });
    req.on("end", () => {
      requests.push({ method: req.method, url: req.url, headers: req.headers, body: body ? JSON.parse(body) : undefined });
      const next = script.length > 1 ? script.shift() : script[0];
      next(req, res);
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((r) => server.close(r)));
beforeEach(() => {
  requests = [];
  script = [answer(200, {})];
});

const client = (options = {}) => new Client({ url, retryDelayMs: 10, ...options });

test("a GET is retried on 503 until it succeeds", async () => {
  script = [unavailable, unavailable, answer(200, { topics: [{ topic: "t", ready: 2, paused: false }] })];
  const topics = await client().topics();
  assert.equal(requests.length, 3);
  assert.equal(topics[0].ready, 2);
  assert.equal(topics[0].dead, 0);
});

test("retries end after `retries`, with the last error", async () => {
  script = [unavailable];
  const error = await client({ retries: 2 }).stats("t").catch((e) => e);
  assert.ok(error instanceof UnavailableError);
  assert.equal(error.status, 503);
  assert.equal(error.message, "store down");
  assert.equal(requests.length, 3);
  requests = [];
  await assert.rejects(client({ retries: 0 }).stats("t"), UnavailableError);
  assert.equal(requests.length, 1);
});

test("the retries back off", async () => {
  script = [unavailable, unavailable, unavailable, answer(200, {})];
  const started = Date.now();
  await client({ retryDelayMs: 40 }).cancel("x");
  // 20-40, 40-80 and 80-160 ms: at least 140 ms in all.
  assert.ok(Date.now() - started >= 140, `took ${Date.now() - started} ms`);
  assert.equal(requests.length, 4);
});

test("a broken connection is retried for a safe call", async () => {
  script = [hangUp, answer(200, { id: "j1", topic: "t", state: "ready", payload: "p" })];
  const job = await client().get("j1");
  assert.equal(job.id, "j1");
  assert.equal(requests.length, 2);
});

test("enqueue without an id, reserve and fail are never retried", async () => {
  for (const call of [
    (c) => c.enqueue("t", "p"),
    (c) => c.enqueueBatch("t", ["p"]),
    (c) => c.reserve("t", { waitMs: 10 }),
    (c) => c.fail({ id: "j", token: "1" }, "boom"),
    (c) => c.kick("t", 3),
    (c) => c.purge("t", { max: 3 }),
  ]) {
    requests = [];
    script = [unavailable, answer(200, {})];
    await assert.rejects(call(client()), UnavailableError);
    assert.equal(requests.length, 1, `${call}`);
    requests = [];
    script = [hangUp, answer(200, {})];
    await assert.rejects(call(client()), ConnectionError);
    assert.equal(requests.length, 1, `${call}`);
  }
});

test("enqueue with an id and the lease calls are retried", async () => {
  for (const call of [
    (c) => c.enqueue("t", "p", { id: "mine" }),
    (c) => c.enqueueBatch("t", ["p"], { id: "mine" }),
    (c) => c.ack({ id: "j", token: "1" }, "r"),
    (c) => c.ackMany([{ id: "j", token: "1" }]),
    (c) => c.release({ id: "j", token: "1" }),
    (c) => c.touch({ id: "j", token: "1" }),
    (c) => c.cancel("j"),
    (c) => c.retry("j"),
    (c) => c.promote("j"),
    (c) => c.pause("t"),
    (c) => c.resume("t"),
    (c) => c.kick("t"),
    (c) => c.purge("t"),
    (c) => c.clearLimit("t"),
    (c) => c.deleteSchedule("s"),
  ]) {
    requests = [];
    script = [unavailable, answer(200, { id: "mine", ids: ["mine"], deadline: "2030-01-01T00:00:00.000Z", acked: 1, errors: [] })];
    await call(client());
    assert.equal(requests.length, 2, `${call}`);
  }
});

test("a server that is not there is a ConnectionError, after the retries", async () => {
  const port = await freePort();
  const error = await new Client({ url: `http://127.0.0.1:${port}`, retries: 2, retryDelayMs: 1 })
    .topics().catch((e) => e);
  assert.ok(error instanceof ConnectionError);
  assert.ok(error instanceof UnavailableError);
  assert.equal(error.status, 0);
  assert.equal(error.code, "UNAVAILABLE");
  assert.match(error.message, /ECONNREFUSED/);
});

test("no reply in time is a TimeoutError, not retried", async () => {
  script = [(req, res) => setTimeout(() => answer(200, {})(req, res), 500)];
  const error = await client({ timeoutMs: 100 }).topics().catch((e) => e);
  assert.ok(error instanceof TimeoutError);
  assert.equal(error.code, "DEADLINE_EXCEEDED");
  assert.equal(requests.length, 1);
});

test("a long poll's wait is added to the timeout", async () => {
  script = [(req, res) => setTimeout(() => answer(200, { leases: [] })(req, res), 300)];
  assert.deepEqual(await client({ timeoutMs: 100 }).reserve("t", { waitMs: 1_000 }), []);
  assert.deepEqual(requests[0].body, { wait_ms: 1_000 });
});

test("error replies become typed errors, by code, else by status", async () => {
  const cases = [
    [answer(404, { code: "NOT_FOUND", message: "no job with id 'x'" }), NotFoundError, "NOT_FOUND", 404],
    [answer(401, { code: "UNAUTHENTICATED", message: "token" }), UnauthenticatedError, "UNAUTHENTICATED", 401],
    [answer(403, { code: "PERMISSION_DENIED", message: "origin" }), PermissionDeniedError, "PERMISSION_DENIED", 403],
    [answer(413, { code: "RESOURCE_EXHAUSTED", message: "big" }), ResourceExhaustedError, "RESOURCE_EXHAUSTED", 413],
    [answer(500, "<html>oops</html>"), InternalError, "INTERNAL", 500],
    [answer(418, { code: "SOMETHING_NEW", message: "new" }), DelayqError, "SOMETHING_NEW", 418],
    [answer(200, "not json"), InternalError, "INTERNAL", 200],
  ];
  for (const [reply, cls, code, status] of cases) {
    script = [reply];
    const error = await client({ retries: 0 }).get("x").catch((e) => e);
    assert.ok(error instanceof cls, `${code}: ${error}`);
    assert.equal(error.code, code);
    assert.equal(error.status, status);
    assert.equal(error.name, cls.name);
  }
});

test("options go out in the API's names; paths and queries are encoded", async () => {
  const c = new Client({ url: `${url}/`, token: "s3cret-token-0123456789" });
  await c.enqueue("a/b", "p", {
    id: "i d", delayMs: 1, runAt: new Date("2030-01-02T03:04:05.678Z"), priority: -1, ttrMs: 2,
    maxAttempts: 3, backoff: "exp:1s:1m", replace: true, keepForMs: 4, keepAtMost: 5,
    expireAfterMs: 6, uniqueForMs: 7, expireAt: "2031-01-01T00:00:00Z", discardExpired: true,
  });
  const [r] = requests;
  assert.equal(r.method, "POST");
  assert.equal(r.url, "/v1/topics/a%2Fb/jobs");
  assert.equal(r.headers["content-type"], "application/json");
  assert.equal(r.headers.authorization, "Bearer s3cret-token-0123456789");
  assert.deepEqual(r.body, {
    payload: "p", id: "i d", delay_ms: 1, run_at: "2030-01-02T03:04:05.678Z", priority: -1, ttr_ms: 2,
    max_attempts: 3, backoff: "exp:1s:1m", replace: true, keep_for_ms: 4, keep_at_most: 5,
    expire_after_ms: 6, unique_for_ms: 7, expire_at: "2031-01-01T00:00:00Z", discard_expired: true,
  });

  requests = [];
  script = [answer(200, { id: "x@2030-01-01T00:00:00Z", topic: "t", state: "done", payload: "p" })];
  await c.get("x@2030-01-01T00:00:00Z", { waitMs: 1500 });
  await c.counts({ minutes: 5, topic: "t" });
  await c.list("t", { state: "dead", limit: 7 });
  await c.putSchedule("s", { spec: "@daily", topic: "t", timeZone: "UTC", jitterMs: 3 });
  await c.setLimit("t", { rate: 1, periodMs: 2, burst: 3, concurrency: 4 });
  await c.pause("t");
  assert.deepEqual(requests.map((q) => `${q.method} ${q.url}`), [
    "GET /v1/jobs/x%402030-01-01T00%3A00%3A00Z?wait=1500ms",
    "GET /v1/counts?minutes=5&topic=t",
    "GET /v1/topics/t/jobs?state=dead&limit=7",
    "PUT /v1/schedules/s",
    "PUT /v1/topics/t/limit",
    "POST /v1/topics/t/pause",
  ]);
  assert.equal(requests[0].headers["content-type"], undefined);
  assert.deepEqual(requests[3].body, { spec: "@daily", topic: "t", time_zone: "UTC", jitter_ms: 3 });
  assert.deepEqual(requests[4].body, { rate: 1, period_ms: 2, burst: 3, concurrency: 4 });
  assert.equal(requests[5].body, undefined);
});
