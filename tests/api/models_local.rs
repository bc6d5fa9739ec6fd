//! The built-in local embedding model, on the files `scripts/bootstrap` installs.

use engram::configuration::EmbeddingSettings;
use engram::metrics::Metrics;
use engram::models::Embedder;

fn local() -> Embedder {
    Embedder::from_settings(&EmbeddingSettings::default(), std::path::Path::new(".engram"), Metrics::new())
        .expect("the local model is installed by scripts/bootstrap")
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn related_sentences_score_far_above_unrelated_ones() {
    let embedder = local();
    let e = embedder
        .embed(&texts(&["I moved our database to PostgreSQL", "we migrated the DB to Postgres", "my cat likes tuna"]))
        .await
        .unwrap();

    let related = e[0].cosine(&e[1]);
    let unrelated = e[0].cosine(&e[2]);

    assert!(related > 0.5, "related {related}");
    assert!(related - unrelated > 0.35, "related {related} vs unrelated {unrelated}");
}

#[tokio::test]
async fn embeddings_are_deterministic_normalised_and_384_dimensional() {
    let embedder = local();
    assert_eq!((embedder.model(), embedder.dims()), ("all-MiniLM-L6-v2", 384));

    let a = embedder.embed(&texts(&["The backend framework is FastAPI"])).await.unwrap().remove(0);
    let fresh = Embedder::from_settings(
        &EmbeddingSettings { cache_entries: 0, ..Default::default() },
        std::path::Path::new(".engram"),
        Metrics::new(),
    )
    .unwrap();
    let b = fresh.embed(&texts(&["The backend framework is FastAPI"])).await.unwrap().remove(0);

    assert_eq!(a.dims(), 384);
    let norm: f32 = a.as_slice().iter().map(|v| v * v).sum::<f32>().sqrt();
    assert!((norm - 1.0).abs() < 1e-4, "norm {norm}");
    assert_eq!(a, b, "the same text gives the same vector, cached or not");
}

#[tokio::test]
async fn a_batch_gives_the_same_vectors_as_single_calls() {
    let settings = EmbeddingSettings { cache_entries: 0, ..Default::default() };
    let embedder = Embedder::from_settings(&settings, std::path::Path::new(".engram"), Metrics::new()).unwrap();
    let items =
        texts(&["short", "a somewhat longer sentence about Kubernetes clusters", "我叫李明，我在北京工作", "ok"]);

    let batch = embedder.embed(&items).await.unwrap();

    for (text, batched) in items.iter().zip(&batch) {
        let single = embedder.embed_one(text).await.unwrap();
        let similarity = single.cosine(batched);
        assert!(similarity > 0.9999, "{text}: {similarity}");
    }
}

#[tokio::test]
async fn long_inputs_are_truncated_not_rejected() {
    let embedder = local();
    let long = "PostgreSQL is our database. ".repeat(400);

    let e = embedder.embed_one(&long).await.unwrap();

    assert_eq!(e.dims(), 384);
}

#[test]
fn a_missing_model_names_the_command_that_installs_it() {
    let settings = EmbeddingSettings { models_dir: Some("/nonexistent/models".into()), ..Default::default() };

    let err = Embedder::from_settings(&settings, std::path::Path::new("/nonexistent"), Metrics::new()).err().unwrap();

    assert!(err.to_string().contains("scripts/bootstrap"), "{err}");
}
