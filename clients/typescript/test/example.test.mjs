// The example runs as a user would run it, against a real engram.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Engram } from "engram-client";

import { freshUser, startServer } from "./server.mjs";

const EXAMPLE = fileURLToPath(new URL("../examples/agent_loop.mjs", import.meta.url));
let server;

before(async () => {
  server = await startServer();
});

after(async () => {
  await server?.stop();
});

test("the agent loop recalls before and remembers after", async () => {
  const user = freshUser();
  const out = execFileSync(process.execPath, [EXAMPLE, user], {
    input: "Our database is PostgreSQL 17.\nWhich database is ours?\n\n",
    env: { ENGRAM_API_KEY: server.keys.admin, ENGRAM_BASE_URL: server.url, PATH: process.env.PATH },
    encoding: "utf8",
  });
  const replies = out.split("\n").filter((line) => line.startsWith("agent: "));
  assert.equal(replies[0], "agent: I don't know anything about that yet.");
  assert.match(replies[1], /PostgreSQL 17/, "the second answer had the first turn in its context");
  const engram = new Engram({ apiKey: server.keys.admin, baseUrl: server.url });
  const { sessions } = await engram.sessions(user);
  assert.equal(sessions.length, 1);
  assert.equal(sessions[0].event_count, 4, "both turns of both exchanges are stored");
});
