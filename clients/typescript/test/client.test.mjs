// The client against a real engram: every kind of call, paged listings, typed errors.

import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  AuthenticationError,
  Engram,
  InvalidRequestError,
  NotFoundError,
  PermissionDeniedError,
} from "engram-client";

import { freshUser, startServer } from "./server.mjs";

let server;
let engram;

before(async () => {
  server = await startServer();
  engram = new Engram({ apiKey: server.keys.admin, baseUrl: server.url });
});

after(async () => {
  await server?.stop();
});

test("turns are stored, searched, and become memories after extract_facts", async () => {
  const user = freshUser();
  const stored = await engram.addEvents([
    { user_id: user, role: "user", content: "Our team deploys with Kubernetes on AWS.", id: `${user}-1` },
    { user_id: user, role: "assistant", content: "Noted.", id: `${user}-2` },
  ]);
  assert.equal(stored.accepted, 2);
  const again = await engram.addEvent(user, "user", "Our team deploys with Kubernetes on AWS.", { id: `${user}-1` });
  assert.equal(again.accepted, 0, "a turn sent again with its id is stored once");

  const turns = await engram.search(user, "how do we deploy?", { kinds: ["event"] });
  assert.match(turns.results[0].content, /Kubernetes/);

  const queued = await engram.runJob("extract_facts", { user_id: user });
  const run = await engram.waitForRun(queued.run_id);
  assert.equal(run.status, "succeeded");
  const facts = await engram.search(user, "which orchestrator does the team use?");
  assert.ok(facts.results.some((r) => r.kind === "fact" && /Kubernetes/.test(r.content)), JSON.stringify(facts));
  const context = await engram.context(user, "how do we deploy?", { maxTokens: 200 });
  assert.match(context.text, /Kubernetes/);
  assert.ok(context.tokens <= 200);
});

test("one memory is added, corrected, listed and deleted", async () => {
  const user = freshUser();
  const added = await engram.addMemory(user, "Prefers dark mode in every app", { category: "preference" });
  assert.equal(added.outcome, "created");
  const id = added.memory.id;
  assert.equal((await engram.search(user, "does the user like dark mode?")).results[0].id, id);

  const edited = await engram.updateMemory(user, id, { content: "Prefers a light theme by day", pinned: true });
  assert.equal(edited.memory.pinned, true);
  assert.equal(edited.history.at(-1).action, "updated");

  const keyed = await engram.addMemory(user, "Works at Globex", { key: "employer" });
  const byKey = await engram.memoriesPage(user, { key: "employer" });
  assert.deepEqual(byKey.memories.map((m) => m.id), [keyed.memory.id]);

  const deleted = await engram.deleteMemory(user, id);
  assert.equal(deleted.deleted.memories, 1);
  await assert.rejects(engram.getMemory(user, id), NotFoundError);
});

test("paged listings are async iterators over every page", async () => {
  const user = freshUser();
  for (const n of [1, 2, 3, 4, 5]) await engram.addMemory(user, `Note number ${n} about project Apollo ${n * 7}`);
  const seen = [];
  for await (const memory of engram.listMemories(user, { limit: 2 })) seen.push(memory.content);
  assert.equal(seen.length, 5);
  assert.match(seen[0], /Note number 5/, "newest first");

  const users = [];
  for await (const summary of engram.listUsers({ limit: 1 })) users.push(summary.user_id);
  assert.ok(users.includes(user));
  assert.deepEqual([...users].sort(), users, "in id order");
});

test("a user's turns are counted, and listed newest first a page at a time", async () => {
  const user = freshUser();
  const said = ["Moved to Porto", "Started at Globex", "My daughter plays the cello", "I run on Sundays"];
  await engram.addEvents(
    said.map((content, i) => ({
      user_id: user,
      role: "user",
      content,
      id: `${user}-${i}`,
      session_id: `s${i % 2}`,
      created_at: new Date(Date.UTC(2026, 2, i + 1, 10)),
    })),
  );
  const summary = await engram.user(user);
  assert.deepEqual(
    [summary.user_id, summary.events, summary.sessions, summary.memories, summary.entities],
    [user, 4, 2, 0, 0],
  );
  assert.equal(new Date(summary.last_activity).toISOString(), "2026-03-04T10:00:00.000Z", "the newest turn's time");

  const turns = [];
  for await (const turn of engram.listTurns(user, { limit: 3 })) turns.push(turn);
  assert.deepEqual(turns.map((t) => t.content), [...said].reverse(), "newest first, over both pages");
  const first = await engram.turnsPage(user, { limit: 3 });
  assert.equal(first.next_cursor, turns[2].id);
  const rest = await engram.turnsPage(user, { limit: 3, cursor: first.next_cursor });
  assert.deepEqual(rest.events.map((t) => t.id), [turns[3].id]);
  assert.equal(rest.next_cursor ?? null, null, "the last page has no cursor");
  const odd = await engram.turnsPage(user, { session_id: "s1" });
  assert.deepEqual(odd.events.map((t) => t.content), [said[3], said[1]]);

  const unknown = await engram.user(freshUser()).catch((err) => err);
  assert.ok(unknown instanceof NotFoundError);
  assert.equal(unknown.status, 404);
});

test("an export is imported into another user, and a webhook is subscribed and deleted", async () => {
  const user = freshUser();
  await engram.addMemory(user, "Keeps a sourdough starter called Clint");
  const exported = await engram.exportUser(user);
  assert.equal(exported.format_version, 1);
  const imported = await engram.importUser(`${user}-copy`, exported);
  assert.equal(imported.added.memories, 1);
  assert.equal((await engram.importUser(`${user}-copy`, exported)).already_present.memories, 1);
  const found = await engram.search(`${user}-copy`, "what is my sourdough starter called?");
  assert.equal(found.results[0].content, "Keeps a sourdough starter called Clint");

  const hook = await engram.createWebhook("https://hooks.example.com/engram", ["memory.deleted"]);
  assert.match(hook.secret, /^whsec_/);
  assert.ok((await engram.webhooks()).webhooks.some((w) => w.id === hook.id));
  assert.deepEqual((await engram.webhookDeliveries(hook.id)).deliveries, []);
  assert.equal((await engram.deleteWebhook(hook.id)).deleted, true);
});

test("whoami names the key's tenant, scopes and user", async () => {
  const me = await engram.whoami();
  assert.equal(me.tenant, "acme");
  assert.deepEqual([...me.scopes].sort(), ["admin", "ingest", "operator", "read"]);
  assert.equal(me.user_id ?? null, null);
  const reader = new Engram({ apiKey: server.keys.reader, baseUrl: server.url });
  assert.deepEqual((await reader.whoami()).scopes, ["read"]);
  const user = freshUser();
  const bound = new Engram({ apiKey: server.createKey("read,ingest", "--user", user), baseUrl: server.url });
  assert.equal((await bound.whoami()).user_id, user);
});

test("a job's runs are listed newest first", async () => {
  const user = freshUser();
  await engram.addEvent(user, "user", "I drive a blue Volvo.", { id: `${user}-runs` });
  const ids = [];
  for (const _ of [1, 2]) {
    const queued = await engram.runJob("evict", { user_id: user, dry_run: true });
    assert.equal((await engram.waitForRun(queued.run_id)).status, "succeeded");
    ids.push(queued.run_id);
  }
  const page = await engram.jobRunsPage("evict", { limit: 1 });
  assert.deepEqual(page.runs.map((r) => r.id), [ids[1]]);
  const older = await engram.jobRunsPage("evict", { limit: 1, cursor: page.next_cursor });
  assert.deepEqual(older.runs.map((r) => r.id), [ids[0]]);
  const [run] = older.runs;
  assert.deepEqual([run.job, run.user_id, run.dry_run, run.trigger], ["evict", user, true, "admin"]);
  await assert.rejects(engram.jobRunsPage("no_such_job"), NotFoundError);
});

test("errors are typed, with status, code, field and request id", async () => {
  const user = freshUser();
  const missing = await engram.getMemory(user, "00000000-0000-0000-0000-000000000000").catch((err) => err);
  assert.ok(missing instanceof NotFoundError);
  assert.equal(missing.status, 404);
  assert.equal(missing.code, "not_found");
  assert.ok(missing.requestId, "engram's x-request-id");

  const invalid = await engram.addMemory(user, "   ").catch((err) => err);
  assert.ok(invalid instanceof InvalidRequestError);
  assert.equal(invalid.field, "content");

  const reader = new Engram({ apiKey: server.keys.reader, baseUrl: server.url });
  const refused = await reader.addMemory(user, "x").catch((err) => err);
  assert.ok(refused instanceof PermissionDeniedError);
  assert.match(refused.message, /ingest/);

  const stranger = new Engram({ apiKey: "egm_not_a_key", baseUrl: server.url });
  await assert.rejects(stranger.search(user, "x"), AuthenticationError);
});

test("a key bound to a user reaches that user only", async () => {
  const user = freshUser();
  const bound = new Engram({ apiKey: server.createKey("read,ingest", "--user", user), baseUrl: server.url });
  await bound.addMemory(user, "Keeps bees on the roof");
  assert.equal((await bound.search(user, "does the user keep bees?")).results[0].content, "Keeps bees on the roof");
  const other = await bound.search(freshUser(), "bees").catch((err) => err);
  assert.ok(other instanceof PermissionDeniedError);
  assert.match(other.message, new RegExp(user));
});
