//! The technologies engram recognises in what users say, by the key of the fact that
//! names them (`database`, `framework`, `ci`, …): the lexicon that gives a fact its key
//! and tells a restatement from a change of value.

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

/// Each technology named in `text`, as (key, canonical name), first mention first.
pub fn technologies(text: &str) -> Vec<(&'static str, String)> {
    let lower = text.to_lowercase();
    let mut found: Vec<(usize, &'static str, String)> = Vec::new();
    for (key, names) in LEXICON {
        for name in *names {
            if let Some(at) = find_word(&lower, name)
                && !found.iter().any(|(_, k, _)| k == key)
            {
                let canonical = if *name == "postgres" {
                    "postgresql"
                } else if *name == "golang" {
                    "go"
                } else {
                    name
                };
                found.push((at, key, canonical.to_owned()));
            }
        }
    }
    found.sort_by_key(|(at, ..)| *at);
    found.into_iter().map(|(_, key, name)| (key, name)).collect()
}

/// Where `word` occurs in `text` as a whole word (CJK names need no boundaries).
fn find_word(text: &str, word: &str) -> Option<usize> {
    let boundary = |c: Option<char>| c.is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '+' || c == '#'));
    let mut from = 0;
    while let Some(at) = text[from..].find(word).map(|i| i + from) {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        if !word.is_ascii() || (boundary(before) && boundary(after)) {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}
