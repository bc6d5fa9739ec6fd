// The TypeScript/JavaScript client of engram, long-term memory for AI agents: one
// method per route, typed errors, retries for the calls that are safe to repeat, and
// async iterators over paged listings. ESM, no dependencies beyond `fetch`.

export const VERSION = "0.1.0";
const DEFAULT_BASE_URL = "http://127.0.0.1:8080";
/** Statuses worth another try: rate limited, and the server's own failures. */
const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);
const INITIAL_DELAY_MS = 500;
const MAX_DELAY_MS = 8000;

/**
 * Every route the client calls: method and path template. `test/openapi.test.mjs`
 * checks this table against the server's `/openapi.json`, both ways.
 */
export const ROUTES = {
  addEvents: ["POST", "/v1/events"],
  search: ["POST", "/v1/search"],
  context: ["GET", "/v1/users/{user_id}/context"],
  feedback: ["POST", "/v1/feedback"],
  memoriesPage: ["GET", "/v1/users/{user_id}/memories"],
  getMemory: ["GET", "/v1/users/{user_id}/memories/{memory_id}"],
  addMemory: ["POST", "/v1/users/{user_id}/memories"],
  updateMemory: ["PATCH", "/v1/users/{user_id}/memories/{memory_id}"],
  deleteMemory: ["DELETE", "/v1/users/{user_id}/memories/{memory_id}"],
  user: ["GET", "/v1/users/{user_id}"],
  turnsPage: ["GET", "/v1/users/{user_id}/events"],
  sessions: ["GET", "/v1/users/{user_id}/sessions"],
  summaries: ["GET", "/v1/users/{user_id}/summaries"],
  exportUser: ["GET", "/v1/users/{user_id}/export"],
  importUser: ["POST", "/v1/users/{user_id}/import"],
  entitiesPage: ["GET", "/v1/users/{user_id}/entities"],
  entity: ["GET", "/v1/users/{user_id}/entities/{entity_id}"],
  graph: ["GET", "/v1/users/{user_id}/graph"],
  graphPath: ["GET", "/v1/users/{user_id}/graph/path"],
  usersPage: ["GET", "/admin/v1/users"],
  forgetUser: ["DELETE", "/admin/v1/users/{user_id}"],
  deletions: ["GET", "/admin/v1/users/{user_id}/deletions"],
  restoreMemory: ["POST", "/admin/v1/users/{user_id}/memories/{memory_id}/restore"],
  restoreEntity: ["POST", "/admin/v1/users/{user_id}/entities/{entity_id}/restore"],
  jobs: ["GET", "/admin/v1/jobs"],
  runJob: ["POST", "/admin/v1/jobs/{job}/runs"],
  jobRun: ["GET", "/admin/v1/jobs/runs/{run_id}"],
  jobRunsPage: ["GET", "/admin/v1/jobs/{job}/runs"],
  pauseJob: ["POST", "/admin/v1/jobs/{job}/pause"],
  resumeJob: ["POST", "/admin/v1/jobs/{job}/resume"],
  createWebhook: ["POST", "/admin/v1/webhooks"],
  webhooks: ["GET", "/admin/v1/webhooks"],
  deleteWebhook: ["DELETE", "/admin/v1/webhooks/{webhook_id}"],
  webhookDeliveries: ["GET", "/admin/v1/webhooks/{webhook_id}/deliveries"],
  whoami: ["GET", "/v1/whoami"],
  health: ["GET", "/healthz"],
  readiness: ["GET", "/readyz"],
  metrics: ["GET", "/metrics"],
  openapi: ["GET", "/openapi.json"],
};

// Errors

/** Every error this client throws. */
export class EngramError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** engram could not be reached, or the connection broke before an answer. */
export class APIConnectionError extends EngramError {}

/** engram did not answer within the timeout. */
export class APITimeoutError extends APIConnectionError {}

/**
 * engram answered with an error: `status`, engram's `code`, `message` and `field`, and
 * `requestId` (its `x-request-id`) to find the request in engram's logs.
 */
export class APIStatusError extends EngramError {
  constructor(status, body, headers) {
    const error = body && typeof body === "object" && body.error && typeof body.error === "object" ? body.error : {};
    const code = String(error.code ?? CODE_OF_STATUS[status] ?? "error");
    const message = String(error.message ?? `HTTP ${status}`);
    super(`${status} ${code}: ${message}`);
    this.status = status;
    this.code = code;
    this.field = error.field ?? null;
    this.requestId = headers?.get("x-request-id") ?? null;
    this.body = body;
    this.detail = message;
  }
}

/** 400: the request was not valid; `field` names what was wrong. */
export class InvalidRequestError extends APIStatusError {}
/** 401: no API key, or a key that is unknown or revoked. */
export class AuthenticationError extends APIStatusError {}
/** 403: the key lacks the scope the call needs, or is bound to another user. */
export class PermissionDeniedError extends APIStatusError {}
/** 404: no such memory, run, job or route. */
export class NotFoundError extends APIStatusError {}
/** 409: the call conflicts with the current state (a run already queued, ...). */
export class ConflictError extends APIStatusError {}
/** 413: the request body is over the server's limit. */
export class PayloadTooLargeError extends APIStatusError {}
/** 415: the body was not sent as JSON. */
export class UnsupportedMediaTypeError extends APIStatusError {}
/** 429: the key is over its rate limit; `retryAfter` is the wait engram asked for, in seconds. */
export class RateLimitError extends APIStatusError {
  constructor(status, body, headers) {
    super(status, body, headers);
    this.retryAfter = retryAfterSeconds(headers);
  }
}
/** 500 (or another 5xx): engram failed; the request id finds it in the logs. */
export class InternalServerError extends APIStatusError {}
/** 503: engram cannot answer now (its database or a model is unavailable, or it is not ready). */
export class ServiceUnavailableError extends APIStatusError {}

const CLASS_OF_CODE = {
  invalid_request: InvalidRequestError,
  unauthorized: AuthenticationError,
  forbidden: PermissionDeniedError,
  not_found: NotFoundError,
  conflict: ConflictError,
  payload_too_large: PayloadTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  rate_limited: RateLimitError,
  unavailable: ServiceUnavailableError,
  not_ready: ServiceUnavailableError,
  internal: InternalServerError,
};

const CODE_OF_STATUS = {
  400: "invalid_request",
  401: "unauthorized",
  403: "forbidden",
  404: "not_found",
  409: "conflict",
  413: "payload_too_large",
  415: "unsupported_media_type",
  429: "rate_limited",
  500: "internal",
  503: "unavailable",
};

/** The error for a response, chosen by engram's code, else by status. */
function errorFor(status, body, headers) {
  const code = body?.error?.code ?? CODE_OF_STATUS[status];
  const cls = CLASS_OF_CODE[code] ?? (status >= 500 ? InternalServerError : APIStatusError);
  return new cls(status, body, headers);
}

function retryAfterSeconds(headers) {
  const value = headers?.get("retry-after");
  if (value == null) return null;
  const seconds = Number(value);
  return Number.isFinite(seconds) ? Math.max(0, seconds) : null;
}

// Requests

function env(name) {
  return typeof process !== "undefined" ? process.env?.[name] : undefined;
}

function clean(values) {
  return Object.fromEntries(Object.entries(values).filter(([, value]) => value !== undefined && value !== null));
}

function time(value) {
  return value instanceof Date ? value.toISOString() : value;
}

function fill(template, params) {
  return template.replace(/\{(\w+)\}/g, (_, name) => {
    const value = params[name];
    if (typeof value !== "string" || value === "") throw new TypeError(`${name} must be a non-empty string`);
    return encodeURIComponent(value);
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The engram API. `apiKey` and `baseUrl` default to `ENGRAM_API_KEY` and
 * `ENGRAM_BASE_URL` where `process.env` exists (Node); in a browser pass them.
 */
export class Engram {
  #apiKey;
  #fetch;

  constructor(options = {}) {
    const apiKey = options.apiKey ?? env("ENGRAM_API_KEY");
    if (!apiKey) throw new EngramError("an API key is required: pass apiKey or set ENGRAM_API_KEY");
    this.#apiKey = apiKey;
    this.baseUrl = (options.baseUrl ?? env("ENGRAM_BASE_URL") ?? DEFAULT_BASE_URL).replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxRetries = Math.max(0, options.maxRetries ?? 2);
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /**
   * Sends one call. `retryable`: reads, and writes that change nothing when repeated;
   * only those are tried again (connection errors, 429 and 5xx, honouring Retry-After).
   */
  async #call(route, { params = {}, query, body, retryable = true, text = false } = {}) {
    const [method, template] = ROUTES[route];
    const url = new URL(this.baseUrl + fill(template, params));
    for (const [name, value] of Object.entries(clean(query ?? {}))) url.searchParams.set(name, String(value));
    const headers = { Authorization: `Bearer ${this.#apiKey}`, Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    for (let attempt = 0; ; attempt++) {
      let response;
      try {
        response = await this.#fetch(url, {
          method,
          headers,
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(this.timeoutMs),
        });
      } catch (err) {
        const timedOut = err?.name === "TimeoutError" || err?.name === "AbortError";
        if (retryable && attempt < this.maxRetries) {
          await sleep(this.#backoff(attempt));
          continue;
        }
        if (timedOut) throw new APITimeoutError(`engram did not answer within ${this.timeoutMs} ms`, { cause: err });
        throw new APIConnectionError(`cannot reach engram at ${this.baseUrl}: ${err?.message ?? err}`, { cause: err });
      }
      if (response.ok) return text ? response.text() : response.json();
      if (retryable && attempt < this.maxRetries && RETRY_STATUSES.has(response.status)) {
        const asked = retryAfterSeconds(response.headers);
        await response.body?.cancel();
        await sleep(asked != null ? Math.min(asked, 60) * 1000 : this.#backoff(attempt));
        continue;
      }
      let parsed = null;
      try {
        parsed = await response.json();
      } catch {
        parsed = null;
      }
      throw errorFor(response.status, parsed, response.headers);
    }
  }

  /** Every item of a paged listing: its pages fetched one after another by `next_cursor`. */
  async *#follow(fetchPage, field) {
    let cursor;
    do {
      const page = await fetchPage(cursor);
      yield* page[field];
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
  }

  #backoff(attempt) {
    return Math.min(MAX_DELAY_MS, INITIAL_DELAY_MS * 2 ** attempt) * (0.5 + Math.random() / 2);
  }

  // Events

  /** Appends events in one transaction; give each an `id` to make retries safe. */
  addEvents(events) {
    const body = events.map((event) => clean({ ...event, created_at: time(event.created_at) }));
    return this.#call("addEvents", { body: { events: body }, retryable: body.every((e) => "id" in e) });
  }

  addEvent(userId, role, content, event = {}) {
    return this.addEvents([{ ...event, user_id: userId, role, content }]);
  }

  // Lookups

  search(userId, query, options = {}) {
    const body = clean({ ...options, user_id: userId, query });
    for (const name of ["since", "until", "as_of"]) if (name in body) body[name] = time(body[name]);
    return this.#call("search", { body });
  }

  context(userId, query, options = {}) {
    return this.#call("context", {
      params: { user_id: userId },
      query: { query, max_tokens: options.maxTokens, session_id: options.sessionId },
    });
  }

  /** `kind`: `wrong`, `outdated` or `helpful`. Not retried. */
  feedback(userId, memoryId, kind, note) {
    return this.#call("feedback", { body: clean({ user_id: userId, memory_id: memoryId, kind, note }), retryable: false });
  }

  // Memories

  memoriesPage(userId, options = {}) {
    return this.#call("memoriesPage", { params: { user_id: userId }, query: options });
  }

  /** Every memory that matches, newest first, fetched a page at a time. */
  listMemories(userId, options = {}) {
    return this.#follow((cursor) => this.memoriesPage(userId, { ...options, cursor }), "memories");
  }

  getMemory(userId, memoryId) {
    return this.#call("getMemory", { params: { user_id: userId, memory_id: memoryId } });
  }

  /**
   * Stores a memory as stated, searchable at once; a near-duplicate is not stored again
   * (`outcome` `duplicate`), and one with the `key` of others supersedes them. Not retried.
   */
  addMemory(userId, content, options = {}) {
    const body = clean({ ...options, content, valid_from: time(options.valid_from) });
    return this.#call("addMemory", { params: { user_id: userId }, body, retryable: false });
  }

  /** Changes what is given (at least one), recorded in the memory's history. */
  updateMemory(userId, memoryId, change) {
    return this.#call("updateMemory", { params: { user_id: userId, memory_id: memoryId }, body: clean(change) });
  }

  /** Deletes a memory for good; `sources: true` also redacts the turns it came from. Not retried. */
  deleteMemory(userId, memoryId, options = {}) {
    return this.#call("deleteMemory", {
      params: { user_id: userId, memory_id: memoryId },
      query: options.sources ? { sources: "true" } : {},
      retryable: false,
    });
  }

  restoreMemory(userId, memoryId) {
    return this.#call("restoreMemory", { params: { user_id: userId, memory_id: memoryId }, retryable: false });
  }

  // Users

  /** What engram holds of a user, counted; `NotFoundError` when it holds nothing. */
  user(userId) {
    return this.#call("user", { params: { user_id: userId } });
  }

  /** A page of the user's raw turns, newest first; of one session with `session_id`. */
  turnsPage(userId, options = {}) {
    return this.#call("turnsPage", { params: { user_id: userId }, query: options });
  }

  /** Every raw turn of the user (or of one session), newest first, a page at a time. */
  listTurns(userId, options = {}) {
    return this.#follow((cursor) => this.turnsPage(userId, { ...options, cursor }), "events");
  }

  sessions(userId, limit) {
    return this.#call("sessions", { params: { user_id: userId }, query: { limit } });
  }

  summaries(userId, limit) {
    return this.#call("summaries", { params: { user_id: userId }, query: { limit } });
  }

  exportUser(userId) {
    return this.#call("exportUser", { params: { user_id: userId } });
  }

  /**
   * Writes an engram export, or Mem0's get_all result, into the user (scope admin).
   * Importing the same document again adds nothing, so it is safe to retry.
   */
  importUser(userId, document) {
    return this.#call("importUser", { params: { user_id: userId }, body: document });
  }

  /** Deletes everything stored about the user, for good (scope admin). */
  forgetUser(userId) {
    return this.#call("forgetUser", { params: { user_id: userId } });
  }

  deletions(userId) {
    return this.#call("deletions", { params: { user_id: userId } });
  }

  // Webhooks (scope admin, a key not bound to one user)

  /** Subscribes `url` to `events`; the answer's secret signs every delivery and is shown only here. */
  createWebhook(url, events, options = {}) {
    return this.#call("createWebhook", { body: clean({ ...options, url, events }), retryable: false });
  }

  webhooks() {
    return this.#call("webhooks", {});
  }

  deleteWebhook(webhookId) {
    return this.#call("deleteWebhook", { params: { webhook_id: webhookId } });
  }

  /** The subscription's latest delivery attempts, newest first. */
  webhookDeliveries(webhookId, limit) {
    return this.#call("webhookDeliveries", { params: { webhook_id: webhookId }, query: { limit } });
  }

  /** A page of the tenant's users in id order (scope admin). */
  usersPage(options = {}) {
    return this.#call("usersPage", { query: options });
  }

  /** Every user of the tenant, fetched a page at a time (scope admin). */
  listUsers(options = {}) {
    return this.#follow((cursor) => this.usersPage({ ...options, cursor }), "users");
  }

  // Graph

  entitiesPage(userId, options = {}) {
    return this.#call("entitiesPage", { params: { user_id: userId }, query: options });
  }

  /** Every entity that matches, a page at a time. */
  listEntities(userId, options = {}) {
    return this.#follow((cursor) => this.entitiesPage(userId, { ...options, cursor }), "entities");
  }

  entity(userId, entityId) {
    return this.#call("entity", { params: { user_id: userId, entity_id: entityId } });
  }

  graph(userId, entity, options = {}) {
    return this.#call("graph", {
      params: { user_id: userId },
      query: { entity, depth: options.depth, as_of: time(options.as_of) },
    });
  }

  graphPath(userId, from, to, options = {}) {
    return this.#call("graphPath", { params: { user_id: userId }, query: { from, to, max_depth: options.max_depth } });
  }

  restoreEntity(userId, entityId) {
    return this.#call("restoreEntity", { params: { user_id: userId, entity_id: entityId }, retryable: false });
  }

  // Jobs

  jobs() {
    return this.#call("jobs");
  }

  /** Queues a run: for one user (`user_id`), the tenant, or every tenant (operator). Not retried. */
  runJob(job, options = {}) {
    return this.#call("runJob", { params: { job }, body: options, retryable: false });
  }

  jobRun(runId) {
    return this.#call("jobRun", { params: { run_id: runId } });
  }

  /** A page of a job's runs, newest first. */
  jobRunsPage(job, options = {}) {
    return this.#call("jobRunsPage", { params: { job }, query: options });
  }

  /** Polls a run until it has ended, and returns it. */
  async waitForRun(runId, { timeoutMs = 120_000, pollMs = 250 } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const run = await this.jobRun(runId);
      if (!["queued", "running"].includes(run.status)) return run;
      if (Date.now() > deadline) throw new APITimeoutError(`run ${runId} did not end within ${timeoutMs} ms`);
      await sleep(pollMs);
    }
  }

  pauseJob(job) {
    return this.#call("pauseJob", { params: { job } });
  }

  resumeJob(job) {
    return this.#call("resumeJob", { params: { job } });
  }

  // Service

  /** The calling key: its tenant, its scopes, and the user it is bound to, if any. */
  whoami() {
    return this.#call("whoami");
  }

  health() {
    return this.#call("health");
  }

  /** Not retried: a readiness probe wants the answer of now. */
  readiness() {
    return this.#call("readiness", { retryable: false });
  }

  /** The Prometheus exposition, as text. */
  metrics() {
    return this.#call("metrics", { text: true });
  }

  openapi() {
    return this.#call("openapi");
  }
}
