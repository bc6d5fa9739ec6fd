// The bodies engram takes and answers, generated from its /openapi.json by
// scripts/generate.mjs; do not edit by hand.

/**
 * What a `memory_history` row records.
 */
export type Action = "created" | "updated" | "merged" | "superseded" | "evicted" | "restored" | "deleted" | "insight";

/**
 * What adding a memory came to.
 */
export interface AddedMemory {
  /**
   * The new memory, or the existing one it duplicates.
   */
  memory: Memory;
  outcome: Outcome;
  /**
   * Same-key memories this one replaced.
   */
  superseded: Array<string>;
}

/**
 * The calling key as `GET /v1/whoami` shows it.
 */
export interface Caller {
  key_id: string;
  /**
   * Of `read`, `ingest`, `admin`, `operator`.
   */
  scopes: Array<string>;
  tenant: string;
  /**
   * The one user the key reaches, if it is bound to one.
   */
  user_id?: string | null;
}

/**
 * A memory's category; any other name is refused where it is read.
 */
export type Category = "identity" | "personal" | "preference" | "project" | "technical" | "decision" | "event" | "lesson" | "statement" | "relationship" | "health" | "finance" | "other";

export interface Context {
  items: Array<ContextItem>;
  max_tokens: number;
  text: string;
  tokens: number;
}

export interface ContextItem {
  id: string;
  kind: ResultKind;
  /**
   * `working`, `profile`, `relations`, `relevant`, `sessions` or `periods`.
   */
  section: string;
  tokens: number;
}

/**
 * `GET /v1/users/{user_id}/context`: the block and how long it took.
 */
export type ContextResponse = Context & { took_ms: number; };

/**
 * One term's share of a learned score, in `explain`.
 */
export interface Contribution {
  /**
   * `weight × value`: what the term adds to the log-odds.
   */
  contribution: number;
  /**
   * A feature, or two joined by `*`.
   */
  term: string;
  value: number;
  weight: number;
}

/**
 * What was stored: the feedback's id.
 */
export interface Created {
  id: string;
}

/**
 * A new subscription, with the secret that signs its deliveries (shown only here).
 */
export interface CreatedWebhook {
  created_at: string;
  description?: string | null;
  events: Array<Event>;
  id: string;
  /**
   * HMAC-SHA256 key of the `Engram-Signature` header; keep it, it is not shown again.
   */
  secret: string;
  url: string;
}

export interface Deleted {
  /**
   * Rows removed per table.
   */
  deleted: Record<string, unknown>;
  user_id: string;
}

/**
 * A recorded deletion of a user, found by the user's id.
 */
export interface Deletion {
  /**
   * `key:<id>` of the API key that asked for it, or `cli`.
   */
  actor: string;
  at: string;
  /**
   * Rows removed, per table.
   */
  deleted: Record<string, unknown>;
}

/**
 * Served by `GET /admin/v1/users/{user_id}/deletions`.
 */
export interface DeletionList {
  deletions: Array<Deletion>;
}

/**
 * One attempt to deliver.
 */
export interface Delivery {
  attempt: number;
  attempted_at: string;
  /**
   * The delivery's id, as its body's `id` carries it: the same on every attempt.
   */
  delivery_id: number;
  duration_ms: number;
  error?: string | null;
  event: string;
  /**
   * `delivered`, `failed` (to be tried again), `expired` (given up after 24 hours) or
   * `refused` (the host is no longer allowed).
   */
  outcome: string;
  status_code?: number | null;
}

export interface DeliveryList {
  deliveries: Array<Delivery>;
}

export interface Entity {
  aliases: Array<string>;
  first_seen: string;
  id: string;
  /**
   * Whether it is the user themself.
   */
  is_user: boolean;
  last_seen: string;
  /**
   * The entity it was merged into.
   */
  merged_into?: string | null;
  name: string;
  status: EntityStatus;
  type: EntityType;
}

export interface EntityDetail {
  entity: Entity;
  history: Array<GraphChange>;
  /**
   * Every relation it takes part in, those superseded included.
   */
  relations: Array<Relation>;
}

export interface EntityPage {
  entities: Array<Entity>;
  next_cursor?: string | null;
}

/**
 * Whether an entity stands, was merged into another, or was deleted.
 */
export type EntityStatus = "active" | "merged" | "deleted";

/**
 * What an entity is.
 */
export type EntityType = "person" | "project" | "technology" | "organization" | "place" | "product" | "concept" | "other";

/**
 * `{"error": {"code", "message", "field"?}}`: every error engram answers.
 */
export interface ErrorBody {
  error: ErrorDetail;
}

export interface ErrorDetail {
  /**
   * `invalid_request`, `unauthorized`, `forbidden`, `not_found`, `conflict`,
   * `payload_too_large`, `unsupported_media_type`, `rate_limited`, `unavailable`,
   * `not_ready`, `internal`
   */
  code: string;
  /**
   * The offending field of an `invalid_request`.
   */
  field?: string | null;
  message: string;
}

/**
 * What a subscriber can be told.
 */
export type Event = "memory.created" | "memory.updated" | "memory.deleted" | "memory.superseded" | "user.deleted" | "job.failed";

export interface EventBatch {
  events: Array<RawEvent>;
}

/**
 * One event, or `{"events": [...]}` (the request body of `POST /v1/events`, parsed
 * by `ingest::parse_body` so that every error names its field).
 */
export type EventsBody = { One: RawEvent; } | { Batch: EventBatch; };

/**
 * What a result's score is made of (see the module documentation).
 */
export interface Explanation {
  /**
   * The learned ranker's bias (its log-odds with every feature 0).
   */
  bias?: number | null;
  /**
   * The blend's score, `relevance × tier × time`.
   */
  blend: number;
  /**
   * Each of the learned ranker's terms: its value, weight and contribution to the
   * log-odds, the largest first.
   */
  contributions?: Array<Contribution> | null;
  /**
   * A memory's decay score (facts and insights only).
   */
  decay?: number | null;
  /**
   * Every feature of the result, by name: what the learned ranker weighs.
   */
  features: Features;
  /**
   * How the score is made.
   */
  formula: string;
  /**
   * How strongly the walk reached a relation: its seed's weight × graph.hop_decay^(hop − 1)
   * (relations only).
   */
  graph?: number | null;
  /**
   * Hops from the entity the walk started at (relations only).
   */
  hop?: number | null;
  /**
   * The share of the query's terms the result contains, each weighing by its rarity.
   */
  keyword: number;
  /**
   * The ranker that made the result's score: `learned` or `blend`.
   */
  ranker: string;
  /**
   * 1 − (1 − max(similarity, 0)) × (1 − keyword).
   */
  relevance: number;
  /**
   * Cosine similarity of the query and the result.
   */
  similarity: number;
  /**
   * The tier's weight: 0.8 + 0.2 × decay for memories, `search.event_weight` for the
   * user's own turns (× `search.other_turn_weight` for other roles'), 1 for summaries,
   * `graph.relation_weight × (1 + graph) / 2` for relations.
   */
  tier: number;
  /**
   * 1, or `search.outside_window_weight` outside the query's time phrase window.
   */
  time: number;
  /**
   * The time phrase window, when the query has one.
   */
  window?: Array<string> | null;
}

/**
 * Every table's rows for the user, embeddings left out: `events`, `sessions`,
 * `period_summaries`, `memories`, `memory_history`, `memory_access`, `feedback`,
 * `job_runs`, `job_checkpoints`, each an array.
 */
export type Export = Record<string, unknown> & { embedding_model: string; exported_at: string; format: string; format_version: number; user_id: string; };

/**
 * One candidate's features. Names are those of the weights file.
 */
export interface Features {
  /**
   * 1 when the question asks when and the result says when.
   */
  answers_when: number;
  /**
   * A memory's decay score (0..1).
   */
  decay: number;
  /**
   * 1 for a fact.
   */
  fact: number;
  /**
   * How surely the graph walk reached a relation: 1 for an edge of an entity the
   * question names, less for each further hop.
   */
  graph: number;
  /**
   * 1 when the question names a time and the result happened within it.
   */
  inside_window: number;
  /**
   * 1 for an insight.
   */
  insight: number;
  /**
   * The weighted share of the query's terms the result holds, a turn's neighbours'
   * counting half.
   */
  keyword: number;
  /**
   * 1 / (1 + its place by keyword share, from 0); 0 when it holds no term.
   */
  keyword_rank: number;
  /**
   * How long it is: ln(1 + tokens) / ln(128), at most 1 ("Yes!" is short).
   */
  length: number;
  /**
   * The share of the names the question writes that the result holds.
   */
  names: number;
  /**
   * 1 for a raw turn of the assistant, a tool or the system.
   */
  other_turn: number;
  /**
   * 1 when the question names a time and the result happened outside it.
   */
  outside_window: number;
  /**
   * The share the result holds itself, without its neighbours.
   */
  own_keyword: number;
  /**
   * 1 for a raw turn the user said.
   */
  own_turn: number;
  /**
   * How recent it is: 1 / (1 + its age in months).
   */
  recency: number;
  /**
   * 1 for a relation of the user's graph.
   */
  relation: number;
  /**
   * 1 when the result says when something happened.
   */
  says_when: number;
  /**
   * For a turn, the best similarity of the other candidate turns of its session: a
   * session that talks about what the question asks.
   */
  session_best: number;
  /**
   * For a turn, the other candidate turns of its session, by fives, at most 1.
   */
  session_turns: number;
  /**
   * Cosine similarity of the query and the result (a turn's vector is made with the
   * turn before it).
   */
  similarity: number;
  /**
   * The best similarity among the candidates less its own.
   */
  similarity_gap: number;
  /**
   * 1 / (1 + its place among the lookup's candidates by similarity, from 0).
   */
  similarity_rank: number;
  /**
   * 1 for a session or period summary.
   */
  summary: number;
}

/**
 * `POST /v1/feedback` as the client sends it.
 */
export interface FeedbackRequest {
  /**
   * `wrong` (it was never true), `outdated` (no longer true) or `helpful`.
   */
  kind: Verdict;
  memory_id: string;
  note?: string | null;
  user_id: string;
}

/**
 * What a `graph_history` row records of its entity or relation.
 */
export type GraphAction = "created" | "updated" | "merged" | "superseded" | "restored" | "deleted";

export interface GraphChange {
  action: GraphAction;
  actor?: string | null;
  after?: unknown;
  before?: unknown;
  created_at: string;
  job_run_id?: string | null;
  reason?: string | null;
}

export interface HistoryEntry {
  action: Action;
  actor?: string | null;
  after?: unknown;
  before?: unknown;
  created_at: string;
  id: string;
  job_run_id?: string | null;
  reason?: string | null;
}

/**
 * What an import did.
 */
export interface Imported {
  /**
   * Rows written, per table.
   */
  added: Record<string, unknown>;
  /**
   * Rows the user already had (the same id), per table: nothing was changed.
   */
  already_present: Record<string, unknown>;
  /**
   * Mem0 memories that said what one of the user's memories already says.
   */
  duplicates: number;
  /**
   * `engram.export` or `mem0`.
   */
  format: string;
  /**
   * Texts in which a secret was replaced by its marker.
   */
  secrets_redacted: number;
  /**
   * What the document held that is not imported (an export's `job_runs`), per table.
   */
  skipped: Record<string, unknown>;
  user_id: string;
  /**
   * Vectors made by this installation's model.
   */
  vectors_made: number;
}

/**
 * What a batch did: ids and sessions in request order.
 */
export interface Ingested {
  /**
   * Events stored by this call.
   */
  accepted: number;
  /**
   * Events whose client id was already stored; nothing was written for them.
   */
  duplicates: number;
  ids: Array<string>;
  session_ids: Array<string>;
}

export interface JobList {
  jobs: Array<JobOverview>;
}

export interface JobOverview {
  /**
   * Whether the job file enables the schedule.
   */
  enabled: boolean;
  last_run?: Run | null;
  name: string;
  /**
   * The next scheduled tick, when enabled and not paused.
   */
  next_run_at?: string | null;
  /**
   * Whether an operator paused the schedule (honoured by every replica).
   */
  paused: boolean;
  /**
   * 6-field cron with seconds, UTC.
   */
  schedule: string;
}

/**
 * A stated fact, or an insight a job derived from facts.
 */
export type Kind = "fact" | "insight";

export interface Memory {
  access_count: number;
  category: Category;
  confidence: number;
  content: string;
  created_at: string;
  /**
   * How much it still matters now, 0–1: `engram_decay`, what `evict` ranks by and
   * search weighs with. Filled in by the API ([`Memory::with_decay`]); 0 elsewhere.
   */
  decay: number;
  derived_from: Array<string>;
  embedding_model?: string | null;
  id: string;
  importance: number;
  key?: string | null;
  kind: Kind;
  last_accessed_at?: string | null;
  /**
   * What came with it from elsewhere: an import from Mem0 keeps `mem0_id` here.
   */
  metadata: Record<string, unknown>;
  pinned: boolean;
  source_event_ids: Array<string>;
  source_quote?: string | null;
  status: Status;
  superseded_by?: string | null;
  updated_at: string;
  user_id: string;
  valid_from: string;
  valid_to?: string | null;
  /**
   * A keyed fact's normalised value (`postgresql` for the key `database`).
   */
  value?: string | null;
}

/**
 * What deleting a memory removed.
 */
export interface MemoryDeleted {
  /**
   * Rows deleted or rewritten, per kind: `memories` (with duplicates merged into it),
   * `memory_access`, `history_redacted`, `relations`, `entities`, `events_redacted`,
   * `summaries_cleared`.
   */
  deleted: Record<string, unknown>;
  memory_id: string;
}

export interface MemoryDetail {
  history: Array<HistoryEntry>;
  memory: Memory;
}

/**
 * An edit (`PATCH /v1/users/{user_id}/memories/{memory_id}`): at least one field.
 */
export interface MemoryEdit {
  category?: Category | null;
  content?: string | null;
  importance?: number | null;
  pinned?: boolean | null;
}

export interface MemoryPage {
  memories: Array<Memory>;
  /**
   * Pass as `cursor` for the next page; absent on the last page.
   */
  next_cursor?: string | null;
}

/**
 * An explicit memory (`POST /v1/users/{user_id}/memories`).
 */
export interface NewMemoryRequest {
  category?: Category | null;
  /**
   * What to remember, in a sentence.
   */
  content: string;
  /**
   * 0–1; 0.7 when absent.
   */
  importance?: number | null;
  /**
   * A stable name for what this states (`employer`, `home_city`): a later memory with
   * the same key supersedes this one.
   */
  key?: string | null;
  /**
   * A pinned memory is never evicted.
   */
  pinned?: boolean | null;
  /**
   * Since when it holds (RFC 3339); now when absent.
   */
  valid_from?: string | null;
}

/**
 * `POST /admin/v1/webhooks`.
 */
export interface NewWebhook {
  /**
   * What it is for, up to 200 characters.
   */
  description?: string | null;
  /**
   * At least one.
   */
  events: Array<Event>;
  /**
   * Where deliveries are posted: `https://…` (or `http://…`), a host that
   * `webhooks.allowed_hosts` allows.
   */
  url: string;
}

/**
 * Whether adding a memory made one.
 */
export type Outcome = "created" | "duplicate";

export interface Paused {
  job: string;
  paused: boolean;
}

export interface PeriodSummary {
  created_at: string;
  id: string;
  /**
   * `week` or `month`
   */
  period: string;
  period_end: string;
  period_start: string;
  session_ids: Array<string>;
  summary: string;
  updated_at: string;
}

export interface Queued {
  run_id: string;
}

/**
 * The wire shape of one event; every field is checked by [`NewEvent::parse`].
 */
export interface RawEvent {
  content?: string | null;
  /**
   * RFC 3339; the server's time when absent.
   */
  created_at?: string | null;
  id?: string | null;
  metadata?: Record<string, unknown> | null;
  role?: string | null;
  session_id?: string | null;
  user_id?: string | null;
}

export interface Relation {
  confidence: number;
  created_at: string;
  expired_at?: string | null;
  /**
   * The sentence that states it.
   */
  fact: string;
  id: string;
  /**
   * The object's name.
   */
  object: string;
  object_id: string;
  predicate: string;
  source_event_ids: Array<string>;
  status: RelationStatus;
  /**
   * The subject's name.
   */
  subject: string;
  subject_id: string;
  valid_from: string;
  valid_to?: string | null;
}

/**
 * Whether a relation holds, was ended by a newer one, or was deleted.
 */
export type RelationStatus = "active" | "superseded" | "deleted";

/**
 * The kind of a search or context result: a memory, or a summary of sessions.
 */
export type ResultKind = "fact" | "insight" | "session_summary" | "period_summary" | "event" | "relation";

export type Role = "user" | "assistant" | "tool" | "system";

export interface Run {
  as_of?: string | null;
  /**
   * Items by action, e.g. `{"users": 12, "evicted": 40}`.
   */
  counts: Record<string, unknown>;
  created_at: string;
  dry_run: boolean;
  error?: string | null;
  finished_at?: string | null;
  heartbeat_at?: string | null;
  id: string;
  job: string;
  started_at?: string | null;
  status: RunStatus;
  stop_reason?: StopReason | null;
  /**
   * The scope: no tenant means every tenant; a user is always within a tenant.
   */
  tenant_id?: string | null;
  tick_at?: string | null;
  trigger: Trigger;
  user_id?: string | null;
  worker_id?: string | null;
}

/**
 * A page of a job's runs; `next_cursor` is absent on the last.
 */
export interface RunPage {
  next_cursor?: string | null;
  runs: Array<Run>;
}

/**
 * Where a run is: queued, then running, then one of the finished states.
 */
export type RunStatus = "queued" | "running" | "succeeded" | "failed" | "cancelled" | "abandoned";

/**
 * `POST /v1/search` as the client sends it.
 */
export interface SearchRequest {
  as_of?: string | null;
  categories?: Array<Category> | null;
  /**
   * A query vector the client computed itself, with the configured dimension.
   */
  embedding?: Array<number> | null;
  /**
   * Adds `explanation` to every result: the parts of its score.
   */
  explain?: boolean;
  kinds?: Array<ResultKind> | null;
  limit?: number | null;
  min_score?: number | null;
  query?: string;
  /**
   * Only what happened at or after this time (RFC 3339).
   */
  since?: string | null;
  /**
   * Only what happened before this time (RFC 3339).
   */
  until?: string | null;
  user_id: string;
}

export interface SearchResponse {
  hit: boolean;
  results: Array<SearchResult>;
  took_ms: number;
}

export interface SearchResult {
  category?: Category | null;
  content: string;
  /**
   * When a raw turn was said (`event` results).
   */
  created_at?: string | null;
  explanation?: Explanation | null;
  /**
   * The sentence that states a relation (`relation` results).
   */
  fact?: string | null;
  id: string;
  key?: string | null;
  kind: ResultKind;
  /**
   * The chain from an entity the query named to a relation (`relation` results):
   * `张伟 —colleague→ 李明 —leads→ 电商项目`.
   */
  path?: string | null;
  /**
   * A relation's predicate, such as `works_at` (`relation` results).
   */
  predicate?: string | null;
  role?: Role | null;
  score: number;
  /**
   * The session of a raw turn (`event` results).
   */
  session_id?: string | null;
  similarity: number;
  source_event_ids: Array<string>;
  updated_at: string;
}

/**
 * What `/healthz` and `/readyz` answer when all is well.
 */
export interface ServiceStatus {
  status: string;
}

export interface Session {
  archived_at?: string | null;
  ended_at?: string | null;
  event_count: number;
  last_event_at: string;
  session_id: string;
  started_at: string;
  summarized_at?: string | null;
  summary?: string | null;
  summary_event_ids: Array<string>;
}

export interface SessionList {
  sessions: Array<Session>;
}

/**
 * Where a memory is in its life: only `active` ones are searched (and `superseded`
 * ones by `as_of`); the others wait for `purge`, restorable meanwhile.
 */
export type Status = "active" | "superseded" | "merged" | "evicted" | "deleted";

/**
 * Why a run stopped before its last unit.
 */
export type StopReason = "max_users" | "max_llm_tokens" | "timeout" | "shutdown";

export interface Subgraph {
  entities: Array<Entity>;
  relations: Array<Relation>;
}

export interface SummaryList {
  summaries: Array<PeriodSummary>;
}

/**
 * Who asked for a run.
 */
export type Trigger = "schedule" | "admin" | "cli";

/**
 * A trigger; every field is optional and an empty body is fine.
 */
export interface TriggerRequest {
  /**
   * Every tenant (the schedule's scope); needs the `operator` scope.
   */
  all_tenants?: boolean;
  /**
   * Compute and report, change nothing.
   */
  dry_run?: boolean;
  /**
   * The key's own tenant when absent; another tenant only with the `operator` scope.
   */
  tenant?: string | null;
  /**
   * Only this user of the tenant; all its users when absent.
   */
  user_id?: string | null;
}

/**
 * One raw turn as a listing shows it.
 */
export interface Turn {
  content: string;
  created_at: string;
  id: string;
  role: Role;
  session_id: string;
}

/**
 * A page of raw turns, newest first.
 */
export interface TurnPage {
  events: Array<Turn>;
  /**
   * Pass as `cursor` for the next page; absent on the last page.
   */
  next_cursor?: string | null;
}

/**
 * A page of the tenant's users; `next_cursor` is absent on the last.
 */
export interface UserPage {
  next_cursor?: string | null;
  users: Array<UserSummary>;
}

/**
 * A user of a tenant as a listing shows them.
 */
export interface UserSummary {
  /**
   * Active entities of the knowledge graph.
   */
  entities: number;
  /**
   * Conversation turns stored.
   */
  events: number;
  /**
   * The newest turn's time, or the newest memory's when there is no turn.
   */
  last_activity?: string | null;
  /**
   * Active memories (facts and insights).
   */
  memories: number;
  sessions: number;
  user_id: string;
}

/**
 * A client's verdict on a memory it was served.
 */
export type Verdict = "wrong" | "outdated" | "helpful";

/**
 * A subscription as listed: never its secret.
 */
export interface Webhook {
  created_at: string;
  description?: string | null;
  events: Array<Event>;
  id: string;
  /**
   * The oldest waiting delivery's time, if any waits.
   */
  oldest_pending_at?: string | null;
  /**
   * Deliveries waiting in the outbox.
   */
  pending: number;
  url: string;
}

export interface WebhookDeleted {
  deleted: boolean;
  id: string;
}

export interface WebhookList {
  webhooks: Array<Webhook>;
}
