//! `index_large_users`: users past a size get an HNSW index of their own, and their
//! lookups, which then go through it, answer as any other way does.

use engram_core::jobs::Scope;
use serde_json::json;

use crate::episodic::{embedded, session, turns};
use crate::helpers::{TestApp, spawn_app_with, test_settings};
use crate::jobs::{executor, job_dir, run};
use crate::search::{contents, seed_project_facts};

const INDEX_JOB: &str = "schedule = \"0 0 * * * *\"\n[params]\nmin_memories = 6\nmax_indexes = 1\n";

/// The users with an index of their own, as the catalog has them: valid, and with the
/// user's id in the index's predicate.
async fn own_indexes(app: &TestApp) -> Vec<(String, bool, String)> {
    sqlx::query_as(
        "SELECT u.user_id, i.indisvalid, pg_get_expr(i.indpred, i.indrelid)
           FROM user_vector_indexes u
           JOIN pg_class c ON c.relname = u.index_name
           JOIN pg_index i ON i.indexrelid = c.oid
          ORDER BY u.user_id",
    )
    .fetch_all(&app.db.pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn large_users_get_an_index_up_to_the_cap_and_lose_it_when_they_shrink() {
    let app = spawn_app_with(test_settings()).await;
    seed_project_facts(&app, "alice").await;
    seed_project_facts(&app, "bob").await;
    app.remember("acme", "carol", "personal", "I drink green tea").await;
    let executor = executor(&app.db, &job_dir(&[("index_large_users", INDEX_JOB)]));

    let dry = run(&executor, "index_large_users", Scope::all(), true).await;
    assert_eq!(dry.status, "succeeded");
    assert_eq!(
        (dry.counts["built"].as_i64(), dry.counts["at_capacity"].as_i64()),
        (Some(1), Some(1)),
        "{}",
        dry.counts
    );
    assert!(own_indexes(&app).await.is_empty(), "a dry run builds nothing");

    // Two users are large enough, the cap allows one; carol is too small.
    let first = run(&executor, "index_large_users", Scope::all(), false).await;
    assert_eq!(
        (first.counts["built"].as_i64(), first.counts["at_capacity"].as_i64()),
        (Some(1), Some(1)),
        "{}",
        first.counts
    );
    let built = own_indexes(&app).await;
    assert_eq!(built.len(), 1);
    let (owner, valid, predicate) = &built[0];
    assert!(*valid);
    assert!(predicate.contains(&format!("user_id = '{owner}'::text")), "{predicate}");

    let again = run(&executor, "index_large_users", Scope::all(), false).await;
    assert_eq!(again.counts["kept"], 1, "{}", again.counts);

    // The owner falls below half of min_memories: the index goes, the other user's comes.
    sqlx::query("UPDATE memories SET status = 'evicted' WHERE user_id = $1 AND category <> 'identity'")
        .bind(owner)
        .execute(&app.db.pool)
        .await
        .unwrap();
    let shrunk = run(&executor, "index_large_users", Scope::all(), false).await;
    assert_eq!(shrunk.counts["dropped"], 1, "{}", shrunk.counts);
    if own_indexes(&app).await.is_empty() {
        run(&executor, "index_large_users", Scope::all(), false).await;
    }
    let now = own_indexes(&app).await;
    assert_eq!(now.len(), 1);
    assert_ne!(&now[0].0, owner);
}

#[tokio::test]
async fn an_index_left_invalid_is_built_again() {
    let app = spawn_app_with(test_settings()).await;
    seed_project_facts(&app, "alice").await;
    let executor = executor(&app.db, &job_dir(&[("index_large_users", INDEX_JOB)]));
    run(&executor, "index_large_users", Scope::all(), false).await;
    // What a crash during CREATE INDEX CONCURRENTLY leaves behind.
    sqlx::query("UPDATE pg_index SET indisvalid = false WHERE indexrelid = (SELECT index_name::regclass FROM user_vector_indexes)")
        .execute(&app.db.pool)
        .await
        .unwrap();

    let repaired = run(&executor, "index_large_users", Scope::all(), false).await;

    assert_eq!(repaired.counts["rebuilt"], 1, "{}", repaired.counts);
    let indexes = own_indexes(&app).await;
    assert_eq!(indexes.len(), 1);
    assert!(indexes[0].1, "valid again");
}

/// Settings under which every lookup of a user takes the index way (`scan_limit` 2), with
/// an own index walked twice as far as by default. Among 8,000 random filler vectors, a
/// turn about as similar to a question as this model makes a paraphrase (cosine 0.25,
/// the fillers' best 0.17) is met only through the few fillers that link to it: over one
/// such index, 200 questions missed it 3% of the time at the default `ef_search` of 100
/// and 0.5% at 200. (At 300 PostgreSQL sorts the 8,000 rows rather than walk the index.)
fn index_way_settings() -> engram_base::configuration::Settings {
    let mut settings = test_settings();
    settings.search.scan_limit = 2;
    settings.search.user_index_ef_search = 200;
    settings
}

/// `n` memories for `user` with random embeddings (far from any question), so that
/// PostgreSQL finds an HNSW index cheaper than reading the user's rows.
async fn filler(app: &TestApp, user: &str, n: i32) {
    sqlx::query(
        "INSERT INTO memories (tenant_id, id, user_id, kind, category, content, embedding, embedding_model, embedding_dims)
         SELECT 'acme', gen_random_uuid(), $1, 'fact', 'other', 'filler note ' || g,
                (SELECT array_agg(random() - 0.5) FROM generate_series(1, 384) WHERE g > 0)::vector, 'filler', 384
           FROM generate_series(1, $2) g",
    )
    .bind(user)
    .bind(n)
    .execute(&app.db.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE memories").execute(&app.db.pool).await.unwrap();
}

/// Index scans of the user's own index so far, once the server's statistics show any.
async fn own_index_scans(app: &TestApp) -> i64 {
    for _ in 0..40 {
        let scans: Option<i64> = sqlx::query_scalar(
            "SELECT s.idx_scan FROM pg_stat_user_indexes s JOIN user_vector_indexes u ON s.indexrelname = u.index_name",
        )
        .fetch_optional(&app.db.pool)
        .await
        .unwrap();
        if scans.unwrap_or(0) > 0 {
            return scans.unwrap_or(0);
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    0
}

#[tokio::test]
async fn a_user_with_an_own_index_is_searched_through_it_with_the_same_answers() {
    // Alice's lookups take the index way in every app here.
    let settings = index_way_settings();
    let shared = spawn_app_with(settings.clone()).await;
    let key = shared.key("acme", "read").await;
    seed_project_facts(&shared, "alice").await;
    shared.remember("acme", "alice", "identity", "我叫李明，在北京做后端开发").await;
    filler(&shared, "alice", 8_000).await;
    let queries = [
        json!({"user_id": "alice", "query": "which database do we use?"}),
        json!({"user_id": "alice", "query": "李明"}),
        json!({"user_id": "alice", "query": "editor", "categories": ["preference"], "min_score": 0.0}),
        json!({"user_id": "alice", "query": "cats", "as_of": chrono::Utc::now().to_rfc3339(), "limit": 2}),
    ];
    let mut before = Vec::new();
    for query in &queries {
        before.push(contents(&shared.search(&key, query).await));
    }

    run(&executor(&shared.db, &job_dir(&[("index_large_users", INDEX_JOB)])), "index_large_users", Scope::all(), false)
        .await;
    // A new app: an app finds out whether a user has an index when it first finds them large.
    let own_url = serve(settings, &shared).await;
    for (query, expected) in queries.iter().zip(&before) {
        let body: serde_json::Value =
            shared.client.post(&own_url).bearer_auth(&key).json(query).send().await.unwrap().json().await.unwrap();
        assert_eq!(&contents(&body), expected, "{query}");
        assert_eq!(body["hit"], true, "{query}");
    }
    assert_eq!(before[0][0], "We use PostgreSQL 16 as our main database");
    assert!(own_index_scans(&shared).await > 0, "the lookups went through alice's own index");
}

#[tokio::test]
async fn deleting_a_user_drops_their_own_index() {
    let app = spawn_app_with(test_settings()).await;
    seed_project_facts(&app, "alice").await;
    run(&executor(&app.db, &job_dir(&[("index_large_users", INDEX_JOB)])), "index_large_users", Scope::all(), false)
        .await;
    assert_eq!(own_indexes(&app).await.len(), 1);
    let admin = app.key("acme", "admin").await;

    let deleted =
        app.client.delete(format!("{}/admin/v1/users/alice", app.address)).bearer_auth(&admin).send().await.unwrap();

    assert_eq!(deleted.status(), 200);
    assert!(
        indexes_gone(&app, "memories_user_vec_%").await,
        "alice's own index is still there 10 s after she was deleted"
    );
}

/// Whether the indexes named like `pattern` and their rows are gone within 10 s (a
/// deleted user's indexes are dropped in the background).
async fn indexes_gone(app: &TestApp, pattern: &str) -> bool {
    for _ in 0..40 {
        let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_indexes WHERE indexname LIKE $1")
            .bind(pattern)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
        if left == 0 {
            return own_indexes(app).await.is_empty();
        }
        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
    }
    false
}

/// `n` raw turns for `user` with random vectors of `dims` dimensions (far from any
/// question), in sessions of ten a month back, so that PostgreSQL finds an HNSW index
/// cheaper than reading the user's rows.
async fn filler_turns(app: &TestApp, user: &str, n: i32, dims: i32) {
    sqlx::query(
        "INSERT INTO events (tenant_id, id, user_id, session_id, role, content, created_at, embedding, embedding_model, embedding_dims)
         SELECT 'acme', gen_random_uuid(), $1, 'filler-' || (g / 10), 'user', 'filler note ' || g,
                now() - interval '30 days' + g * interval '1 second',
                (SELECT array_agg(random() - 0.5) FROM generate_series(1, $3) WHERE g > 0)::vector::halfvec, 'filler', $3
           FROM generate_series(1, $2) g",
    )
    .bind(user)
    .bind(n)
    .bind(dims)
    .execute(&app.db.pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE events").execute(&app.db.pool).await.unwrap();
}

/// Starts another app on `app`'s database with `settings`; its search address.
async fn serve(settings: engram_base::configuration::Settings, app: &TestApp) -> String {
    let other = engram_server::startup::Application::build(settings, app.db.clone()).await.unwrap();
    let url = format!("http://127.0.0.1:{}/v1/search", other.port());
    tokio::spawn(other.run_until_stopped());
    url
}

/// The turns `query` finds through the app at `url`.
async fn search_turns(app: &TestApp, key: &str, url: &str, query: &serde_json::Value) -> Vec<serde_json::Value> {
    let mut query = query.clone();
    query["kinds"] = json!(["event"]);
    query["min_score"] = json!(0.0);
    let body: serde_json::Value =
        app.client.post(url).bearer_auth(key).json(&query).send().await.unwrap().json().await.unwrap();
    body["results"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_user_with_many_turns_gets_an_index_of_them_searched_with_the_same_answers_and_dropped_with_them() {
    // Ana's lookups take the index way in every app here.
    let settings = index_way_settings();
    let shared = spawn_app_with(settings.clone()).await;
    let key = shared.key("acme", "read,ingest").await;
    let decision = [
        ("user", "After the outage we decided to move the billing service from Ruby to Kotlin."),
        ("assistant", "Noted: billing moves to Kotlin."),
    ];
    let said = session(&shared, &key, "ana", "planning", 60, &decision).await;
    session(&shared, &key, "ana", "today", 0, &[("user", "我们决定下个月搬到上海")]).await;
    embedded(&shared).await;
    let dims: i32 = sqlx::query_scalar("SELECT embedding_dims::int FROM events WHERE user_id = 'ana' LIMIT 1")
        .fetch_one(&shared.db.pool)
        .await
        .unwrap();
    filler_turns(&shared, "ana", 8_000, dims).await;
    let queries = [
        json!({"user_id": "ana", "query": "which programming language did we choose for payments?", "limit": 3}),
        json!({"user_id": "ana", "query": "上海", "limit": 3}),
        json!({"user_id": "ana", "query": "what did we decide two months ago?", "limit": 3}),
    ];
    let before = turns(&shared, &key, queries[0].clone()).await;
    assert!(before.iter().any(|r| r["id"] == said[0].as_str()), "{before:?}");
    // The exact answers, from an app that reads all of ana's turns: the shared graph is
    // approximate too, and either graph may miss a turn the other finds.
    let mut exact_settings = settings.clone();
    exact_settings.search.scan_limit = 10_000;
    let exact_url = serve(exact_settings, &shared).await;
    let mut exact = Vec::new();
    for query in &queries {
        exact.push(search_turns(&shared, &key, &exact_url, query).await);
    }

    let job = "schedule = \"0 0 * * * *\"\n[params]\nmin_events = 6\n";
    let built =
        run(&executor(&shared.db, &job_dir(&[("index_large_users", job)])), "index_large_users", Scope::all(), false)
            .await;
    assert_eq!(built.counts["built"], 1, "one index, over ana's turns (she has no memories): {}", built.counts);
    let indexes = own_indexes(&shared).await;
    assert_eq!(indexes.len(), 1);
    let (owner, valid, predicate) = &indexes[0];
    assert_eq!((owner.as_str(), *valid), ("ana", true));
    assert!(predicate.contains("user_id = 'ana'::text"), "{predicate}");

    // A new app: an app finds out whether a user has an index when it first finds them large.
    let own_url = serve(settings, &shared).await;
    for (query, expected) in queries.iter().zip(&exact) {
        let found = search_turns(&shared, &key, &own_url, query).await;
        // The best turn that was said first, and no said turn the exact answers do not
        // hold; filler turns (random vectors, near ties) may differ, and a said turn that
        // only ties with them may be left out, as approximate nearest neighbours do.
        let said = |results: &[serde_json::Value]| {
            let said = results.iter().filter(|r| !r["content"].as_str().unwrap().starts_with("filler note"));
            said.map(|r| r["id"].clone()).collect::<Vec<_>>()
        };
        let (found, expected) = (said(&found), said(expected));
        assert!(!found.is_empty(), "{query}");
        assert_eq!(found[0], expected[0], "{query}");
        assert!(found.iter().all(|id| expected.contains(id)), "{query}: {found:?} against {expected:?}");
    }
    assert!(own_index_scans(&shared).await > 0, "the lookups went through ana's own index");

    let admin = shared.key("acme", "admin").await;
    let deleted = shared
        .client
        .delete(format!("{}/admin/v1/users/ana", shared.address))
        .bearer_auth(&admin)
        .send()
        .await
        .unwrap();
    assert_eq!(deleted.status(), 200);
    assert!(
        indexes_gone(&shared, "events_user_vec_%").await,
        "ana's own index is still there 10 s after she was deleted"
    );
}
