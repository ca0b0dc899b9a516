// Real servers for the tests: `delayq serve` on a free loopback port over a
// SQLite file or a redis-server that the tests start and stop themselves.
// A missing program is an error, never a skip.
//
// The delayq program is $DELAYQ_BIN, else the Bazel build's
// .bazel/bin/tools/delayq/delayq of the checkout; redis-server is
// $REDIS_SERVER, else found on PATH, else /usr/bin/redis-server.

import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before, describe } from "node:test";
import { fileURLToPath } from "node:url";

import { Client } from "../dist/index.js";

const here = path.dirname(fileURLToPath(import.meta.url));

export function delayqBinary() {
  if (process.env.DELAYQ_BIN) return process.env.DELAYQ_BIN;
  for (let dir = here; dir !== path.dirname(dir); dir = path.dirname(dir)) {
    const candidate = path.join(dir, ".bazel", "bin", "tools", "delayq", "delayq");
    if (existsSync(candidate)) return candidate;
  }
  throw new Error("delayq not found: set DELAYQ_BIN, or `bazel build //tools:delayq` in the checkout");
}

function onPath(name) {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (dir && existsSync(path.join(dir, name))) return path.join(dir, name);
  }
  return null;
}

export function redisServerBinary() {
  if (process.env.REDIS_SERVER) {
    if (!existsSync(process.env.REDIS_SERVER)) throw new Error(`no redis-server at ${process.env.REDIS_SERVER}`);
    return process.env.REDIS_SERVER;
  }
  const found = onPath("redis-server") ||
    (existsSync("/usr/bin/redis-server") ? "/usr/bin/redis-server" : null);
  if (!found) {
    throw new Error("redis-server not found on PATH or at /usr/bin/redis-server " +
      "(tools/setup.sh installs Debian's redis-server)");
  }
  return found;
}

export function tempDir(prefix) {
  const base = process.env.TEST_TMPDIR || os.tmpdir();
  return mkdtempSync(path.join(base, prefix));
}

/** A port the kernel just handed out on 127.0.0.1 (free unless another process takes it first). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function pings(port) {
  return new Promise((resolve) => {
    const socket = net.connect(port, "127.0.0.1");
    let reply = "";
    socket.setTimeout(500, () => socket.destroy());
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (d) => {
      reply += d;
      if (reply.includes("\r\n")) socket.end();
    });
    socket.on("close", () => resolve(reply.startsWith("+PONG")));
    socket.on("error", () => resolve(false));
  });
}

// Resolves with the exit code once `child` has exited.
function exited(child) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(child.exitCode);
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

/** A redis-server without persistence on a free loopback port, in a temp dir. */
export async function startRedis() {
  const binary = redisServerBinary();
  for (let attempt = 0; attempt < 5; attempt++) {
    const port = await freePort();
    const dir = tempDir("redis-");
    const child = spawn(binary, ["--port", String(port), "--bind", "127.0.0.1", "--save", "",
      "--appendonly", "no", "--dir", dir, "--logfile", path.join(dir, "redis.log")],
    { stdio: "ignore" });
    for (let i = 0; i < 100 && child.exitCode === null; i++) {
      if (await pings(port)) {
        return {
          url: `redis://127.0.0.1:${port}`,
          async stop() {
            child.kill("SIGTERM");
            await exited(child);
            rmSync(dir, { recursive: true, force: true });
          },
        };
      }
      await sleep(100);
    }
    child.kill("SIGKILL");
    await exited(child);
    rmSync(dir, { recursive: true, force: true });
  }
  throw new Error("redis-server did not start");
}

/** `delayq serve --store STORE --listen 127.0.0.1:0 ARGS...`, once it listens. */
export async function startServe(store, args = []) {
  const child = spawn(delayqBinary(), ["serve", "--store", store, "--listen", "127.0.0.1:0", ...args],
    { stdio: ["ignore", "pipe", "pipe"] });
  let stderr = "";
  child.stderr.on("data", (d) => { stderr += d; });
  const port = await new Promise((resolve, reject) => {
    let out = "";
    const timer = setTimeout(() => reject(new Error(`delayq serve did not listen in time: ${stderr}`)), 30_000);
    child.stdout.on("data", (d) => {
      out += d;
      const match = /listening on http:\/\/\S*:(\d+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(Number(match[1]));
      }
    });
    child.on("error", (e) => { clearTimeout(timer); reject(e); });
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`delayq serve exited (${code}) before it listened: ${stderr}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    child,
    stderr: () => stderr,
    /** SIGTERM, then the exit code. */
    async stop() {
      child.kill("SIGTERM");
      return exited(child);
    },
  };
}

/** A store of each kind, started before a test file's suite and stopped after it. */
export const stores = [
  {
    name: "sqlite",
    async start() {
      const dir = tempDir("sqlite-");
      return { url: `sqlite:${path.join(dir, "jobs.db")}`, stop: async () => rmSync(dir, { recursive: true, force: true }) };
    },
  },
  { name: "redis", start: startRedis },
];

/**
 * Runs `body(env)` inside describe(STORE) for each store, with `env.url`
 * the server's URL, `env.client` a Client of it, `env.storeUrl` and
 * `env.server`, all set once the suite's before() has run.
 */
export function forEachStore(body) {
  for (const kind of stores) {
    describe(kind.name, () => {
      const env = {};
      before(async () => {
        env.store = await kind.start();
        env.storeUrl = env.store.url;
        env.server = await startServe(env.storeUrl);
        env.url = env.server.url;
        env.client = new Client({ url: env.url, timeoutMs: 20_000 });
      });
      after(async () => {
        if (env.server) await env.server.stop();
        if (env.store) await env.store.stop();
      });
      body(env);
    });
  }
}

let counter = 0;
/** A name no other test of this process uses (topics, ids). */
export function unique(prefix) {
  counter += 1;
  return `${prefix}.${process.pid}.${counter}.${Math.random().toString(36).slice(2, 8)}`;
}

/** Polls `check` until it returns a truthy value or `ms` pass. */
export async function eventually(check, ms = 10_000, what = "condition") {
  const end = Date.now() + ms;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export { sleep };
