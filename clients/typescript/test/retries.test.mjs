// Retries and connection errors, against a local stub server that answers as told.

import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { APIConnectionError, APITimeoutError, Engram, RateLimitError, ServiceUnavailableError } from "engram-client";

let stub;
let url;
/** What the stub answers next, one entry per request: [status, headers, body]; then 200. */
let script = [];
let seen = [];

before(async () => {
  stub = createServer((request, response) => {
    seen.push(`${request.method} ${request.url}`);
    const [status, headers, body] = script.shift() ?? [200, {}, { status: "ok" }];
    if (status === "hang") return; // never answers
    response.writeHead(status, { "content-type": "application/json", ...headers });
    response.end(JSON.stringify(body));
  });
  await new Promise((resolve) => stub.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${stub.address().port}`;
});

after(async () => {
  stub.closeAllConnections();
  await new Promise((resolve) => stub.close(resolve));
});

const unavailable = [503, {}, { error: { code: "unavailable", message: "the service is temporarily unavailable" } }];

test("a safe call is tried again after a 503, and Retry-After is honoured", async () => {
  script = [[429, { "retry-after": "1" }, { error: { code: "rate_limited", message: "slow down" } }], unavailable];
  seen = [];
  const engram = new Engram({ apiKey: "egm_x", baseUrl: url, maxRetries: 2 });
  const started = Date.now();
  assert.deepEqual(await engram.health(), { status: "ok" });
  assert.equal(seen.length, 3);
  assert.ok(Date.now() - started >= 1000, "waited the second Retry-After asked for");
});

test("a call that is not safe to repeat is sent once", async () => {
  script = [unavailable];
  seen = [];
  const engram = new Engram({ apiKey: "egm_x", baseUrl: url, maxRetries: 3 });
  await assert.rejects(engram.addMemory("alice", "Likes tea"), ServiceUnavailableError);
  assert.deepEqual(seen, ["POST /v1/users/alice/memories"]);
  script = [unavailable];
  seen = [];
  await assert.rejects(engram.addEvents([{ user_id: "alice", role: "user", content: "no id" }]), ServiceUnavailableError);
  assert.equal(seen.length, 1, "events without ids are not retried");
});

test("retries end, and the last error is thrown with its details", async () => {
  script = [[429, { "retry-after": "0" }, { error: { code: "rate_limited", message: "slow down" } }],
    [429, { "retry-after": "0" }, { error: { code: "rate_limited", message: "slow down" } }]];
  seen = [];
  const engram = new Engram({ apiKey: "egm_x", baseUrl: url, maxRetries: 1 });
  const err = await engram.search("alice", "tea").catch((e) => e);
  assert.ok(err instanceof RateLimitError);
  assert.equal(err.retryAfter, 0);
  assert.equal(seen.length, 2);
});

test("no server, and a server that never answers, are connection errors", async () => {
  const closed = new Engram({ apiKey: "egm_x", baseUrl: "http://127.0.0.1:9", maxRetries: 0 });
  await assert.rejects(closed.health(), APIConnectionError);
  script = [["hang"]];
  const slow = new Engram({ apiKey: "egm_x", baseUrl: url, maxRetries: 0, timeoutMs: 300 });
  await assert.rejects(slow.health(), APITimeoutError);
});
