// A real engram for the tests: a fresh database on the test PostgreSQL, the `engram`
// binary serving it on a free loopback port, and API keys of each kind. Needs
// ENGRAM_TEST_DATABASE_URL and ENGRAM_TEST_PG_BIN (as `scripts/test` sets them);
// ENGRAM_BIN names the binary (default: the debug build of this checkout).

import { execFileSync, spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../../", import.meta.url));

const binary = () =>
  process.env.ENGRAM_BIN ?? `${process.env.CARGO_TARGET_DIR ?? `${ROOT}target`}/debug/engram`;

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on("error", reject);
  });
}

function database(adminUrl, name, action) {
  const url = new URL(adminUrl);
  const tool = `${process.env.ENGRAM_TEST_PG_BIN}/${action === "create" ? "createdb" : "dropdb"}`;
  const extra = action === "drop" ? ["--force", "--if-exists"] : [];
  execFileSync(tool, ["-h", url.hostname, "-p", url.port || "5432", "-U", url.username || "postgres", ...extra, name]);
}

/** Starts engram on a fresh database; `stop()` ends it and drops the database. */
export async function startServer() {
  const adminUrl = process.env.ENGRAM_TEST_DATABASE_URL;
  if (!adminUrl) throw new Error("ENGRAM_TEST_DATABASE_URL is not set: run the tests through scripts/test");
  const name = `tsclient_${randomUUID().replaceAll("-", "").slice(0, 12)}`;
  database(adminUrl, name, "create");
  const databaseUrl = new URL(adminUrl);
  databaseUrl.pathname = `/${name}`;
  const port = await freePort();
  const env = {
    ...process.env,
    ENGRAM_DATABASE__URL: databaseUrl.toString(),
    ENGRAM_LOG__FILTER: "warn",
    ENGRAM_SERVER__KEY_CACHE_SECS: "0",
  };
  const engram = (...args) =>
    execFileSync(binary(), ["--home", `${ROOT}.engram`, ...args], { env, cwd: ROOT, encoding: "utf8" });
  const createKey = (scopes, ...extra) =>
    engram("keys", "create", "--tenant", "acme", "--scope", scopes, ...extra).trim().split("\n").at(-1);
  engram("migrate");
  const keys = { admin: createKey("read,ingest,admin,operator"), reader: createKey("read") };
  const child = spawn(binary(), ["--home", `${ROOT}.engram`, "serve", "--bind", `127.0.0.1:${port}`], {
    env,
    cwd: ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not up yet
    }
    if (child.exitCode !== null || Date.now() > deadline) throw new Error("engram did not start");
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  return {
    url,
    keys,
    createKey,
    async stop() {
      child.kill("SIGTERM");
      await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once("exit", resolve)));
      database(adminUrl, name, "drop");
    },
  };
}

/** A user no other test writes to. */
export const freshUser = () => `user-${randomUUID().slice(0, 10)}`;
