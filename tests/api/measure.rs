//! The measuring commands as smoke tests: `engram eval` on the shipped scenarios and on
//! a LoCoMo-format file, and `engram bench --quick`. Figures are reported, not asserted;
//! what is checked is that every part runs and reports.

use serde_json::{Value, json};

fn engram(args: &[&str], json_out: &std::path::Path) -> Value {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_engram"))
        .args(args)
        .arg("--json")
        .arg(json_out)
        .env("ENGRAM_DATABASE__URL", std::env::var("ENGRAM_TEST_DATABASE_URL").expect("set by scripts/test"))
        .env("ENGRAM_LOG__FILTER", "warn")
        .output()
        .expect("the engram binary runs");
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_str(&std::fs::read_to_string(json_out).unwrap()).unwrap()
}

/// Two conversations: two speakers and two sessions, a question answered by the second
/// session; and a later, shorter one.
fn locomo_sample() -> Value {
    json!([{
        "sample_id": "t1",
        "conversation": {
            "speaker_a": "Caroline", "speaker_b": "Melanie",
            "session_1_date_time": "1:56 pm on 8 May, 2023",
            "session_1": [
                {"speaker": "Caroline", "dia_id": "D1:1", "text": "Hey Mel! I started a pottery class last week."},
                {"speaker": "Melanie", "dia_id": "D1:2", "text": "That sounds fun! I went camping with my kids."}
            ],
            "session_2_date_time": "10:37 am on 27 June, 2023",
            "session_2": [
                {"speaker": "Caroline", "dia_id": "D2:1", "text": "I adopted a dog named Biscuit yesterday."},
                {"speaker": "Melanie", "dia_id": "D2:2", "text": "Congratulations on Biscuit!"}
            ]
        },
        "qa": [
            {"question": "What is the name of Caroline's dog?", "answer": "Biscuit", "evidence": ["D2:1"], "category": 1},
            {"question": "What does Melanie do with her kids?", "answer": "camping", "evidence": ["D1:2"], "category": 4},
            {"question": "An adversarial question", "answer": "n/a", "evidence": [], "category": 5}
        ]
    }, {
        // Later than the first conversation's end: replayed on its own clock.
        "sample_id": "t2",
        "conversation": {
            "speaker_a": "Jon", "speaker_b": "Gina",
            "session_1_date_time": "2:00 pm on 3 March, 2024",
            "session_1": [
                {"speaker": "Jon", "dia_id": "D1:1", "text": "I opened a dance studio downtown."},
                {"speaker": "Gina", "dia_id": "D1:2", "text": "That is wonderful news, Jon."}
            ]
        },
        "qa": [{"question": "What did Jon open?", "answer": "dance studio", "evidence": ["D1:1"], "category": 1}]
    }])
}

#[tokio::test]
async fn eval_scores_every_scenario_category_and_reads_locomo() {
    let dir = tempfile::tempdir().unwrap();

    let scenarios = engram(&["eval"], &dir.path().join("eval.json"));

    for category in ["fact_recall", "knowledge_update", "dedup", "decay", "multi_session", "chinese", "no_hit"] {
        assert!(scenarios["categories"][category]["questions"].as_u64().unwrap() > 0, "{category}: {scenarios}");
    }
    assert!(scenarios["overall"]["questions"].as_u64().unwrap() >= 40);
    assert!(scenarios["overall"]["recall"].as_f64().unwrap() > 0.0);
    assert!(scenarios["compression"].as_f64().unwrap() > 0.0);

    let file = dir.path().join("locomo.json");
    std::fs::write(&file, locomo_sample().to_string()).unwrap();
    let features = dir.path().join("features.jsonl");
    let args = ["eval", "--locomo", file.to_str().unwrap(), "--features", features.to_str().unwrap()];
    let locomo = engram(&args, &dir.path().join("locomo-out.json"));

    let retrievers = &locomo["locomo"]["retrievers"];
    assert_eq!(retrievers["engram"]["overall"]["questions"], 3, "category 5 is left out: {locomo}");
    assert_eq!(locomo["raw_events"], 12, "each speaker holds the whole conversation");
    assert!(retrievers["engram"]["categories"]["1"]["evidence_recall_at_10"].is_number());
    for baseline in ["transcript_bm25", "transcript_dense", "transcript_hybrid"] {
        assert_eq!(
            retrievers[baseline]["overall"]["evidence_recall_at_5"], 1.0,
            "{baseline}: at most four turns a conversation, so every evidence is in the top 5"
        );
    }
    assert_eq!(
        retrievers["engram"]["overall"]["evidence_recall_at_5"], 1.0,
        "engram's lookups return the raw turns too: {locomo}"
    );
    assert_eq!(locomo["event_storage"]["rows"], 12);
    assert!(locomo["event_storage"]["embedding_bytes_per_event"].as_f64().unwrap() > 0.0, "every turn embedded");
    assert!(locomo["storage_ratio"].as_f64().unwrap() > 0.0);
    assert!(retrievers["engram"]["overall"]["evidence_in_context_1024"].as_f64().unwrap() > 0.0, "{locomo}");

    // The labelled candidates, and the fit that reads them.
    let lines: Vec<Value> =
        std::fs::read_to_string(&features).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let questions: Vec<&Value> = lines.iter().filter(|l| l["type"] == "question" && l["category"] != 0).collect();
    assert_eq!(questions.len(), 4, "category 5 too: {lines:?}");
    let elsewhere: Vec<&Value> = lines.iter().filter(|l| l["category"] == 0).collect();
    assert_eq!(elsewhere.len(), 1, "the second conversation's question asked of the first: {lines:?}");
    assert!(lines.iter().filter(|l| l["question"] == elsewhere[0]["id"]).all(|c| c["evidence"] == false));
    let dog = questions.iter().find(|q| q["question"] == "What is the name of Caroline's dog?").unwrap();
    let evidence: Vec<&Value> = lines.iter().filter(|l| l["question"] == dog["id"] && l["evidence"] == true).collect();
    assert!(!evidence.is_empty(), "the turn that answers is a candidate labelled evidence: {lines:?}");
    assert!(evidence.iter().all(|c| c["dia"].as_array().unwrap().contains(&json!("D2:1"))));
    assert!(evidence[0]["features"]["similarity"].is_number() && evidence[0]["blend"].is_number());
    let python = std::env::var("ENGRAM_TEST_FIT_PYTHON").expect("set by scripts/test");
    let (weights, report) = (dir.path().join("learned.json"), dir.path().join("cv.json"));
    let fit = std::process::Command::new(python)
        .arg("scripts/fit_ranker.py")
        .arg(&features)
        .args(["--out", weights.to_str().unwrap(), "--report", report.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(fit.status.success(), "{}", String::from_utf8_lossy(&fit.stderr));
    let model = engram_core::search::ranker::Model::read(&weights).expect("the fit writes weights engram reads");
    let strong = engram_core::search::features::Features { similarity: 0.9, own_turn: 1.0, ..Default::default() };
    assert!((0.0..=1.0).contains(&model.score(&strong)));
    let report: Value = serde_json::from_str(&std::fs::read_to_string(&report).unwrap()).unwrap();
    assert_eq!(report["folds"].as_array().unwrap().len(), 2, "one fold a conversation: {report}");
}

#[tokio::test]
async fn bench_quick_reports_every_scenario() {
    let dir = tempfile::tempdir().unwrap();

    let report = engram(&["bench", "--quick", "--clients", "4"], &dir.path().join("bench.json"));

    let metrics: Vec<String> =
        report["figures"].as_array().unwrap().iter().map(|f| format!("{}/{}", f["scenario"], f["metric"])).collect();
    for expected in [
        "\"embedder\"/\"single_p50\"",
        "\"search\"/\"vector_p99\"",
        "\"search\"/\"large_user_recall_at_10\"",
        "\"jobs\"/\"evict_seconds\"",
        "\"jobs\"/\"dedup_recall\"",
        "\"ingest\"/\"throughput\"",
        "\"summarize\"/\"throughput\"",
        "\"reembed\"/\"throughput\"",
    ] {
        assert!(metrics.iter().any(|m| m == expected), "{expected} missing from {metrics:?}");
    }
    let moved =
        report["figures"].as_array().unwrap().iter().find(|f| f["scenario"] == "reembed" && f["metric"] == "texts");
    assert_eq!(moved.unwrap()["value"], 200.0, "every memory and turn of the quick size moved to the model");
}

/// `--llm-url` runs the scenarios twice, without and with a real OpenAI-compatible
/// model (the llama.cpp server `scripts/test` starts), and reports both.
#[tokio::test]
async fn eval_with_an_llm_reports_figures_with_and_without_it() {
    let url = std::env::var("ENGRAM_TEST_LLM_URL").expect("set by scripts/test");
    let dir = tempfile::tempdir().unwrap();
    let scenarios = dir.path().join("scenarios");
    std::fs::create_dir(&scenarios).unwrap();
    std::fs::copy("eval/01_profile.json", scenarios.join("01_profile.json")).unwrap();

    let args = ["eval", "--scenarios", scenarios.to_str().unwrap(), "--llm-url", &url, "--llm-model", "smollm2"];
    let report = engram(&args, &dir.path().join("eval.json"));

    assert_eq!(report["without_llm"]["llm"], false, "{report}");
    assert_eq!(report["with_llm"]["llm"], true, "{report}");
    for run in ["without_llm", "with_llm"] {
        assert!(report[run]["overall"]["questions"].as_u64().unwrap() > 10, "{run}: {report}");
    }
    assert!(report["without_llm"]["overall"]["recall"].as_f64().unwrap() > 0.5, "the rules find the profile: {report}");
    // The small model adds little, but it never costs a fact the rules find.
    for (category, without) in report["without_llm"]["categories"].as_object().unwrap() {
        let with = &report["with_llm"]["categories"][category];
        assert!(
            with["recall"].as_f64().unwrap() >= without["recall"].as_f64().unwrap(),
            "{category}: recall with the LLM fell: {report}"
        );
    }
}
