// The TypeScript block of docs/integrations.md runs as written against a real engram.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync, rmSync, writeFileSync } from "node:fs";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import { ROOT, startServer } from "./server.mjs";

const page = readFileSync(`${ROOT}docs/integrations.md`, "utf8");
const block = page.split("## TypeScript")[1].match(/```js\n([\s\S]*?)```/)[1];
// Inside the package, so that `import "engram-client"` resolves to it.
const script = fileURLToPath(new URL("./docs-block.tmp.mjs", import.meta.url));
let server;

before(async () => {
  server = await startServer();
  writeFileSync(script, block);
});

after(async () => {
  rmSync(script, { force: true });
  await server?.stop();
});

test("the TypeScript block of the integrations page runs as written", () => {
  const out = execFileSync(process.execPath, [script], {
    env: { ENGRAM_API_KEY: server.keys.admin, ENGRAM_BASE_URL: server.url, PATH: process.env.PATH },
    encoding: "utf8",
  });
  const [first, ...context] = out.trim().split("\n");
  assert.equal(first, "We moved our database to PostgreSQL");
  assert.ok(context.some((line) => line.includes("PostgreSQL")), out);
});
