// The client cannot drift from the server: its route table matches the running
// engram's /openapi.json both ways, src/schema.d.ts is what that document generates,
// and the declarations and the example type-check with TypeScript.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { Engram, ROUTES } from "engram-client";

import { render } from "../scripts/generate.mjs";
import { startServer } from "./server.mjs";

const HERE = fileURLToPath(new URL("..", import.meta.url));
let server;
let document;

before(async () => {
  server = await startServer();
  document = await new Engram({ apiKey: server.keys.reader, baseUrl: server.url }).openapi();
});

after(async () => {
  await server?.stop();
});

test("every documented route has a method, and every method a documented route", () => {
  const documented = new Set();
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const method of Object.keys(operations)) documented.add(`${method.toUpperCase()} ${path}`);
  }
  // /docs is the document's page for people, not for an agent's client.
  documented.delete("GET /docs");
  const called = new Set(Object.values(ROUTES).map(([method, path]) => `${method} ${path}`));
  assert.deepEqual([...documented].filter((route) => !called.has(route)), [], "routes without a method");
  assert.deepEqual([...called].filter((route) => !documented.has(route)), [], "methods without a route");
});

test("the types are the ones the server's document generates", async () => {
  const committed = await readFile(new URL("../src/schema.d.ts", import.meta.url), "utf8");
  assert.equal(committed, render(document), "run: node scripts/generate.mjs <engram>/openapi.json");
});

test("the declarations and the example type-check", () => {
  const tsc = `${HERE}node_modules/typescript/bin/tsc`;
  execFileSync(process.execPath, [tsc, "-p", `${HERE}tsconfig.json`], { cwd: HERE, stdio: "inherit" });
});
