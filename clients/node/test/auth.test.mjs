// A server started with --token-file: requests without the token are
// refused with UnauthenticatedError, the client's `token` gets through.

import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import path from "node:path";
import { after, before, test } from "node:test";

import { Client, UnauthenticatedError } from "../dist/index.js";
import { startServe, tempDir } from "./servers.mjs";

const token = "node-client-test-token-0123456789";
let server;

before(async () => {
  const dir = tempDir("auth-");
  const file = path.join(dir, "token");
  writeFileSync(file, `${token}\n`, { mode: 0o600 });
  server = await startServe("memory:", ["--token-file", file]);
});
after(async () => {
  if (server) await server.stop();
});

test("no token, or a wrong one: UnauthenticatedError", async () => {
  for (const client of [new Client({ url: server.url }), new Client({ url: server.url, token: "wrong-token-0123456789" })]) {
    const error = await client.topics().catch((e) => e);
    assert.ok(error instanceof UnauthenticatedError, String(error));
    assert.equal(error.status, 401);
    assert.equal(error.code, "UNAUTHENTICATED");
  }
});

test("the token gets through", async () => {
  const client = new Client({ url: server.url, token });
  const id = await client.enqueue("auth", "x");
  assert.equal((await client.get(id)).payload, "x");
  assert.ok((await client.topics()).some((t) => t.topic === "auth"));
});
