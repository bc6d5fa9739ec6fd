//! The built-in local embedding models, on the files `scripts/bootstrap` installs.

use engram_base::configuration::{EmbeddingSettings, LocalModelChoice};
use engram_base::metrics::Metrics;
use engram_base::models::Embedder;

const BOTH: [LocalModelChoice; 2] = [LocalModelChoice::UseMultilingual, LocalModelChoice::Minilm];

fn local(local_model: LocalModelChoice) -> Embedder {
    let settings = EmbeddingSettings { local_model, cache_entries: 0, ..Default::default() };
    Embedder::from_settings(&settings, std::path::Path::new(".engram"), &Default::default(), Metrics::new())
        .expect("the local model is installed by scripts/bootstrap")
}

#[test]
fn the_default_is_the_multilingual_model() {
    let embedder =
        Embedder::from_settings(&EmbeddingSettings::default(), ".engram".as_ref(), &Default::default(), Metrics::new())
            .unwrap();

    assert_eq!((embedder.model(), embedder.dims()), ("universal-sentence-encoder-multilingual-3", 512));
}

fn texts(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[tokio::test]
async fn related_sentences_score_far_above_unrelated_ones() {
    for choice in BOTH {
        let embedder = local(choice);
        let e = embedder
            .embed(&texts(&[
                "I moved our database to PostgreSQL",
                "we migrated the DB to Postgres",
                "my cat likes tuna",
            ]))
            .await
            .unwrap();

        let related = e[0].cosine(&e[1]);
        let unrelated = e[0].cosine(&e[2]);

        assert!(related > 0.5, "{choice:?}: related {related}");
        assert!(related - unrelated > 0.35, "{choice:?}: related {related} vs unrelated {unrelated}");
    }
}

#[tokio::test]
async fn embeddings_are_deterministic_normalised_and_of_their_models_dimension() {
    for (choice, name, dims) in [
        (LocalModelChoice::UseMultilingual, "universal-sentence-encoder-multilingual-3", 512),
        (LocalModelChoice::Minilm, "all-MiniLM-L6-v2", 384),
    ] {
        let settings = EmbeddingSettings { local_model: choice, ..Default::default() };
        let cached =
            Embedder::from_settings(&settings, ".engram".as_ref(), &Default::default(), Metrics::new()).unwrap();
        assert_eq!((cached.model(), cached.dims()), (name, dims));

        let a = cached.embed(&texts(&["The backend framework is FastAPI"])).await.unwrap().remove(0);
        let a_again = cached.embed(&texts(&["The backend framework is FastAPI"])).await.unwrap().remove(0);
        let b = local(choice).embed(&texts(&["The backend framework is FastAPI"])).await.unwrap().remove(0);

        assert_eq!(a.dims(), dims);
        let norm: f32 = a.as_slice().iter().map(|v| v * v).sum::<f32>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "{choice:?}: norm {norm}");
        assert_eq!(a, a_again, "{choice:?}: a cached text gives the same vector");
        assert_eq!(a, b, "{choice:?}: the same text gives the same vector, cached or not");
    }
}

#[tokio::test]
async fn a_batch_gives_the_same_vectors_as_single_calls() {
    for choice in BOTH {
        let embedder = local(choice);
        let items =
            texts(&["short", "a somewhat longer sentence about Kubernetes clusters", "我叫李明，我在北京工作", "ok"]);

        let batch = embedder.embed(&items).await.unwrap();

        for (text, batched) in items.iter().zip(&batch) {
            let single = embedder.embed_one(text).await.unwrap();
            let similarity = single.cosine(batched);
            assert!(similarity > 0.9999, "{choice:?}, {text}: {similarity}");
        }
    }
}

#[tokio::test]
async fn long_inputs_are_truncated_not_rejected() {
    for choice in BOTH {
        let long = "PostgreSQL is our database. ".repeat(400);

        let e = local(choice).embed_one(&long).await.unwrap();

        assert_eq!(e.dims(), choice.dims(), "{choice:?}");
    }
}

#[test]
fn a_missing_model_names_the_command_that_installs_it() {
    let settings = EmbeddingSettings { models_dir: Some("/nonexistent/models".into()), ..Default::default() };

    let err =
        Embedder::from_settings(&settings, std::path::Path::new("/nonexistent"), &Default::default(), Metrics::new())
            .err()
            .unwrap();

    assert!(err.to_string().contains("scripts/bootstrap"), "{err}");
}

#[test]
fn the_segmenter_finds_chinese_words_and_names() {
    let segmenter = engram_base::models::Segmenter::shared(std::path::Path::new(".engram/models"))
        .expect("the segmenter is installed by scripts/bootstrap");
    let said = |text: &str| -> Vec<(String, String)> {
        segmenter.words(text).unwrap().into_iter().map(|w| (w.text, w.tag)).collect()
    };
    let words = said("我同事刘洋下个月调去深圳");
    assert!(words.contains(&("刘洋".into(), "PER".into())), "{words:?}");
    assert!(words.contains(&("深圳".into(), "LOC".into())), "{words:?}");
    let words = said("张三在上海交通大学工作");
    assert!(words.contains(&("上海交通大学".into(), "ORG".into())), "{words:?}");
    // Where each word starts, in bytes, so that a caller can cut the text there.
    let text = "李明住在杭州";
    for word in segmenter.words(text).unwrap() {
        assert_eq!(&text[word.start..word.start + word.text.len()], word.text);
    }
    assert!(segmenter.words("").unwrap().is_empty());
}
