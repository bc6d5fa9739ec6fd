//! The technologies engram recognises in what users say, by the key of the fact that
//! names them (`database`, `framework`, `ci`, …): the lexicon that gives a fact its key
//! and tells a restatement from a change of value.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

/// Technologies by the key of the fact that names them; the first spelling is canonical.
const LEXICON: &[(&str, &[&str])] = &[
    (
        "database",
        &[
            "postgresql",
            "postgres",
            "mysql",
            "mariadb",
            "mongodb",
            "sqlite",
            "redis",
            "cassandra",
            "dynamodb",
            "clickhouse",
            "cockroachdb",
            "sql server",
            "oracle",
            "supabase",
            "elasticsearch",
            "tidb",
            "oceanbase",
            "valkey",
            "memcached",
        ],
    ),
    (
        "framework",
        &[
            "react",
            "vue",
            "angular",
            "svelte",
            "next.js",
            "nuxt",
            "django",
            "flask",
            "fastapi",
            "rails",
            "spring boot",
            "spring",
            "express",
            "actix",
            "laravel",
            "nestjs",
        ],
    ),
    (
        "language",
        &[
            "python",
            "rust",
            "golang",
            "go",
            "java",
            "typescript",
            "javascript",
            "kotlin",
            "swift",
            "c++",
            "c#",
            "ruby",
            "php",
            "elixir",
            "scala",
        ],
    ),
    (
        "cloud",
        &[
            "aws",
            "gcp",
            "google cloud",
            "azure",
            "digitalocean",
            "heroku",
            "vercel",
            "cloudflare",
            "fly.io",
            "alibaba cloud",
            "tencent cloud",
            "阿里云",
            "腾讯云",
        ],
    ),
    ("ci", &["github actions", "gitlab ci", "jenkins", "circleci", "travis", "buildkite"]),
    ("bundler", &["webpack", "vite", "rollup", "parcel", "esbuild", "turbopack"]),
    ("orchestration", &["kubernetes", "k8s", "docker swarm", "nomad", "ecs"]),
];

/// Names of the lexicon that are another name of one before them: one technology, one value.
const SAME: &[(&str, &str)] = &[
    ("postgres", "postgresql"),
    ("golang", "go"),
    ("k8s", "kubernetes"),
    ("gcp", "google cloud"),
    ("阿里云", "alibaba cloud"),
    ("腾讯云", "tencent cloud"),
];

/// Every name of the lexicon with its key, in the lexicon's order, and one automaton that
/// finds all of them in a single pass over a text.
static NAMES: LazyLock<(AhoCorasick, Vec<(&'static str, &'static str)>)> = LazyLock::new(|| {
    let names: Vec<(&str, &str)> =
        LEXICON.iter().flat_map(|(key, names)| names.iter().map(move |name| (*key, *name))).collect();
    let automaton =
        AhoCorasick::new(names.iter().map(|(_, name)| name)).expect("the lexicon's names are plain strings");
    (automaton, names)
});

/// Whether `name` is, as a whole, one of the lexicon's names of a technology.
pub fn is_named(name: &str) -> bool {
    let name = name.trim().to_lowercase();
    NAMES.1.iter().any(|(_, known)| *known == name)
}

/// Each technology named in `text`, as (key, canonical name), first mention first. A key's
/// name is the first of its names (in the lexicon's order) that `text` holds.
pub fn technologies(text: &str) -> Vec<(&'static str, String)> {
    let lower = text.to_lowercase();
    let (automaton, names) = &*NAMES;
    let mut first: Vec<Option<usize>> = vec![None; names.len()];
    for found in automaton.find_overlapping_iter(&lower) {
        let (name, at) = (found.pattern().as_usize(), found.start());
        if first[name].is_none() && whole_word(&lower, names[name].1, at) {
            first[name] = Some(at);
        }
    }
    let mut found: Vec<(usize, &'static str, String)> = Vec::new();
    for (&(key, name), at) in names.iter().zip(first) {
        if let Some(at) = at
            && !found.iter().any(|(_, k, _)| *k == key)
        {
            let canonical = SAME.iter().find(|(other, _)| *other == name).map_or(name, |(_, canonical)| *canonical);
            found.push((at, key, canonical.to_owned()));
        }
    }
    found.sort_by_key(|(at, ..)| *at);
    found.into_iter().map(|(_, key, name)| (key, name)).collect()
}

/// Whether `word`, found in `text` at `at`, stands there as a whole word (CJK names need no
/// boundaries).
fn whole_word(text: &str, word: &str, at: usize) -> bool {
    let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '+' || c == '#'));
    !word.is_ascii() || (boundary(text[..at].chars().next_back()) && boundary(text[at + word.len()..].chars().next()))
}
