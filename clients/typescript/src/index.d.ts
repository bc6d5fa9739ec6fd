// The client's types. The bodies are src/schema.d.ts, generated from engram's
// /openapi.json; what the client adds (options, errors) is declared here.

import type {
  AddedMemory,
  Caller,
  ContextResponse,
  Created,
  CreatedWebhook,
  Deleted,
  DeliveryList,
  DeletionList,
  Entity,
  EntityDetail,
  EntityPage,
  Event,
  Export,
  Imported,
  Ingested,
  JobList,
  Memory,
  MemoryDeleted,
  MemoryDetail,
  MemoryPage,
  Paused,
  Queued,
  Run,
  RunPage,
  SearchResponse,
  ServiceStatus,
  SessionList,
  Subgraph,
  SummaryList,
  Turn,
  TurnPage,
  UserPage,
  UserSummary,
  WebhookDeleted,
  WebhookList,
} from "./schema.js";

export type * from "./schema.js";

export declare const VERSION: string;
export declare const ROUTES: Record<string, readonly [string, string]>;

export interface EngramOptions {
  /** Default: `ENGRAM_API_KEY` (Node). */
  apiKey?: string;
  /** Default: `ENGRAM_BASE_URL` (Node), else http://127.0.0.1:8080. */
  baseUrl?: string;
  /** Per try; default 30 000. */
  timeoutMs?: number;
  /** Tries after the first, for calls safe to repeat; default 2. */
  maxRetries?: number;
  /** Your own `fetch`; default the global one. */
  fetch?: typeof fetch;
}

/** One conversation event as `POST /v1/events` takes it. */
export interface EventInput {
  user_id: string;
  role: "user" | "assistant" | "tool" | "system";
  content: string;
  session_id?: string;
  /** Your id for the event: sending it again stores nothing new. */
  id?: string;
  created_at?: string | Date;
  metadata?: Record<string, unknown>;
}

export interface SearchOptions {
  kinds?: Array<"fact" | "insight" | "event" | "session_summary" | "period_summary">;
  limit?: number;
  min_score?: number;
  categories?: string[];
  since?: string | Date;
  until?: string | Date;
  as_of?: string | Date;
  embedding?: number[];
  explain?: boolean;
}

export interface ContextOptions {
  maxTokens?: number;
  sessionId?: string;
}

export interface ListOptions {
  category?: string;
  status?: "active" | "superseded" | "merged" | "evicted" | "deleted";
  kind?: "fact" | "insight";
  /** Only memories of this key. */
  key?: string;
  limit?: number;
  cursor?: string;
}

export interface NewMemory {
  category?: string;
  key?: string;
  importance?: number;
  pinned?: boolean;
  valid_from?: string | Date;
}

export interface MemoryChange {
  content?: string;
  category?: string;
  importance?: number;
  pinned?: boolean;
}

export interface PageOptions {
  limit?: number;
  cursor?: string;
}

export interface TurnOptions extends PageOptions {
  /** Only this session's turns. */
  session_id?: string;
}

export interface EntityOptions extends PageOptions {
  query?: string;
  type?: string;
}

export interface RunOptions {
  user_id?: string;
  tenant?: string;
  all_tenants?: boolean;
  dry_run?: boolean;
}

export declare class Engram {
  constructor(options?: EngramOptions);
  readonly baseUrl: string;
  readonly timeoutMs: number;
  readonly maxRetries: number;

  addEvents(events: EventInput[]): Promise<Ingested>;
  addEvent(userId: string, role: EventInput["role"], content: string,
    event?: Partial<Omit<EventInput, "user_id" | "role" | "content">>): Promise<Ingested>;

  search(userId: string, query: string, options?: SearchOptions): Promise<SearchResponse>;
  context(userId: string, query?: string, options?: ContextOptions): Promise<ContextResponse>;
  feedback(userId: string, memoryId: string, kind: "wrong" | "outdated" | "helpful", note?: string): Promise<Created>;

  memoriesPage(userId: string, options?: ListOptions): Promise<MemoryPage>;
  listMemories(userId: string, options?: Omit<ListOptions, "cursor">): AsyncIterableIterator<Memory>;
  getMemory(userId: string, memoryId: string): Promise<MemoryDetail>;
  addMemory(userId: string, content: string, options?: NewMemory): Promise<AddedMemory>;
  updateMemory(userId: string, memoryId: string, change: MemoryChange): Promise<MemoryDetail>;
  deleteMemory(userId: string, memoryId: string, options?: { sources?: boolean }): Promise<MemoryDeleted>;
  restoreMemory(userId: string, memoryId: string): Promise<MemoryDetail>;

  user(userId: string): Promise<UserSummary>;
  turnsPage(userId: string, options?: TurnOptions): Promise<TurnPage>;
  listTurns(userId: string, options?: Omit<TurnOptions, "cursor">): AsyncIterableIterator<Turn>;
  sessions(userId: string, limit?: number): Promise<SessionList>;
  summaries(userId: string, limit?: number): Promise<SummaryList>;
  exportUser(userId: string): Promise<Export>;
  importUser(userId: string, document: Export | Record<string, unknown> | unknown[]): Promise<Imported>;
  forgetUser(userId: string): Promise<Deleted>;
  deletions(userId: string): Promise<DeletionList>;
  createWebhook(url: string, events: Event[], options?: { description?: string }): Promise<CreatedWebhook>;
  webhooks(): Promise<WebhookList>;
  deleteWebhook(webhookId: string): Promise<WebhookDeleted>;
  webhookDeliveries(webhookId: string, limit?: number): Promise<DeliveryList>;
  usersPage(options?: PageOptions): Promise<UserPage>;
  listUsers(options?: Omit<PageOptions, "cursor">): AsyncIterableIterator<UserSummary>;

  entitiesPage(userId: string, options?: EntityOptions): Promise<EntityPage>;
  listEntities(userId: string, options?: Omit<EntityOptions, "cursor">): AsyncIterableIterator<Entity>;
  entity(userId: string, entityId: string): Promise<EntityDetail>;
  graph(userId: string, entity: string, options?: { depth?: number; as_of?: string | Date }): Promise<Subgraph>;
  graphPath(userId: string, from: string, to: string, options?: { max_depth?: number }): Promise<Subgraph>;
  restoreEntity(userId: string, entityId: string): Promise<EntityDetail>;

  jobs(): Promise<JobList>;
  runJob(job: string, options?: RunOptions): Promise<Queued>;
  jobRun(runId: string): Promise<Run>;
  jobRunsPage(job: string, options?: PageOptions): Promise<RunPage>;
  waitForRun(runId: string, options?: { timeoutMs?: number; pollMs?: number }): Promise<Run>;
  pauseJob(job: string): Promise<Paused>;
  resumeJob(job: string): Promise<Paused>;

  whoami(): Promise<Caller>;
  health(): Promise<ServiceStatus>;
  readiness(): Promise<ServiceStatus>;
  metrics(): Promise<string>;
  openapi(): Promise<Record<string, unknown>>;
}

export declare class EngramError extends Error {}
export declare class APIConnectionError extends EngramError {}
export declare class APITimeoutError extends APIConnectionError {}
export declare class APIStatusError extends EngramError {
  readonly status: number;
  /** engram's error code: `invalid_request`, `forbidden`, `not_found`, … */
  readonly code: string;
  /** The offending field of an `invalid_request`. */
  readonly field: string | null;
  /** engram's `x-request-id`, to find the request in its logs. */
  readonly requestId: string | null;
  readonly detail: string;
  readonly body: unknown;
}
export declare class InvalidRequestError extends APIStatusError {}
export declare class AuthenticationError extends APIStatusError {}
export declare class PermissionDeniedError extends APIStatusError {}
export declare class NotFoundError extends APIStatusError {}
export declare class ConflictError extends APIStatusError {}
export declare class PayloadTooLargeError extends APIStatusError {}
export declare class UnsupportedMediaTypeError extends APIStatusError {}
export declare class RateLimitError extends APIStatusError {
  /** The wait engram asked for, in seconds. */
  readonly retryAfter: number | null;
}
export declare class InternalServerError extends APIStatusError {}
export declare class ServiceUnavailableError extends APIStatusError {}
