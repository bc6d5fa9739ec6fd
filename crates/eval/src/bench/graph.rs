//! Graph extraction by rules: sentences read per second, English and Chinese mixed,
//! and relations found per sentence. (Storing them costs one embedding per new entity
//! and per relation: see the embedder's figures.)

use std::time::Instant;

use super::Figure;
use engram_core::graph::Aliases;
use engram_language::relations::extract::extract;
use engram_language::relations::mention::Discourse;

const SENTENCES: &[&str] = &[
    "I lead the checkout project.",
    "The checkout project uses Django and Postgres.",
    "My colleague Priya owns the payment module.",
    "The payment module depends on the order service.",
    "We migrated the billing service from MySQL to PG.",
    "I live in Lisbon and I work at Acme Corp.",
    "That sounds great, thanks for the tip!",
    "我是李明，负责电商项目。",
    "电商项目用的是 FastAPI 和 PostgreSQL。",
    "张伟是我的同事，负责支付模块。",
    "电商项目已经从 PostgreSQL 迁移到 TiDB 了",
    "好的，明天再聊。",
];

pub fn run(quick: bool) -> Vec<Figure> {
    let rounds = if quick { 2_000 } else { 20_000 };
    let aliases = Aliases::default();
    let started = Instant::now();
    let mut relations = 0;
    for _ in 0..rounds {
        let mut discourse = Discourse::default();
        for sentence in SENTENCES {
            relations += extract(sentence, &aliases, &mut discourse).triples.len();
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let sentences = (rounds * SENTENCES.len()) as f64;
    vec![
        Figure { scenario: "graph", metric: "rule_extraction".into(), value: sentences / seconds, unit: "sentences/s" },
        Figure {
            scenario: "graph",
            metric: "relations_per_sentence".into(),
            value: relations as f64 / sentences,
            unit: "relations",
        },
    ]
}
