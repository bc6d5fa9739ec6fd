//! What an entity is called: the normal form names are matched by, when two names are
//! told apart however alike, and the shipped aliases (PG → PostgreSQL, k8s →
//! Kubernetes, 阿里云 ↔ Alibaba Cloud), which `graph.aliases` extends.

use std::collections::HashMap;

use crate::technologies::technologies;

/// Canonical names and the other names they go by. Matching is on the normal form.
const ALIASES: &[(&str, &[&str])] = &[
    ("PostgreSQL", &["postgres", "pg", "pgsql", "psql", "postgre"]),
    ("MySQL", &["my sql"]),
    ("MongoDB", &["mongo"]),
    ("Redis", &[]),
    ("TiDB", &[]),
    ("SQLite", &[]),
    ("Elasticsearch", &["elastic", "es"]),
    ("Kubernetes", &["k8s", "kube"]),
    ("JavaScript", &["js", "ecmascript"]),
    ("TypeScript", &["ts"]),
    ("Python", &["py", "python3"]),
    ("Go", &["golang"]),
    ("Rust", &[]),
    ("Java", &[]),
    ("C++", &["cpp"]),
    ("C#", &["csharp"]),
    ("FastAPI", &["fast api"]),
    ("Django", &[]),
    ("Flask", &[]),
    ("React", &["reactjs", "react.js"]),
    ("Vue", &["vuejs", "vue.js"]),
    ("Next.js", &["nextjs", "next"]),
    ("Node.js", &["node", "nodejs"]),
    ("Spring Boot", &["springboot"]),
    ("GitHub Actions", &["gh actions"]),
    ("GitLab CI", &["gitlab-ci"]),
    ("Amazon Web Services", &["aws", "亚马逊云"]),
    ("Google Cloud", &["gcp", "google cloud platform", "谷歌云"]),
    ("Microsoft Azure", &["azure", "微软云"]),
    ("Alibaba Cloud", &["aliyun", "阿里云"]),
    ("Tencent Cloud", &["腾讯云"]),
    ("Docker", &[]),
    ("Kafka", &["apache kafka"]),
    ("RabbitMQ", &["rabbit"]),
    ("GraphQL", &["gql"]),
    ("Vite", &[]),
    ("Webpack", &[]),
];

/// Lower case, single spaces, without a leading article or possessive ("the", "our",
/// "my", "这个"): "The  Payment Module" and "payment module" are one name.
pub fn normalise(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    while words.len() > 1 && matches!(words[0], "the" | "our" | "my" | "a" | "an" | "this" | "that") {
        words.remove(0);
    }
    let joined = words.join(" ");
    let trimmed = joined.trim_matches(|c: char| matches!(c, '"' | '\'' | '“' | '”' | '「' | '」' | '《' | '》'));
    ["这个", "那个", "我们的", "我的", "该"]
        .iter()
        .find_map(|prefix| trimmed.strip_prefix(prefix).filter(|rest| rest.chars().count() >= 2))
        .unwrap_or(trimmed)
        .to_owned()
}

/// The alias table: the normal form of every name, canonical or not, to its canonical name.
#[derive(Debug, Clone)]
pub struct Aliases(HashMap<String, String>);

impl Aliases {
    /// The shipped table, extended (or overridden) by `extra`: alias → canonical name.
    pub fn new(extra: &HashMap<String, String>) -> Self {
        let mut table = HashMap::new();
        for (canonical, others) in ALIASES {
            table.insert(normalise(canonical), (*canonical).to_owned());
            for other in *others {
                table.insert(normalise(other), (*canonical).to_owned());
            }
        }
        for (alias, canonical) in extra {
            table.insert(normalise(canonical), canonical.clone());
            table.insert(normalise(alias), canonical.clone());
        }
        Self(table)
    }

    /// The canonical name `name` goes by, if the table knows it.
    pub fn canonical(&self, name: &str) -> Option<&str> {
        self.0.get(&normalise(name)).map(String::as_str)
    }

    /// The normal forms of every name the canonical `name` goes by, itself included.
    pub fn all_names_of(&self, name: &str) -> Vec<String> {
        let canonical = self.canonical(name).unwrap_or(name);
        let mut names: Vec<String> =
            self.0.iter().filter(|(_, c)| c.as_str() == canonical).map(|(alias, _)| alias.clone()).collect();
        let own = normalise(canonical);
        if !names.contains(&own) {
            names.push(own);
        }
        names.sort();
        names
    }
}

/// The trigrams of `text` as PostgreSQL's `pg_trgm` makes them, sorted: every three
/// characters in a row of each word (a run of letters and digits, lowercased) padded with
/// two spaces before and one after.
pub fn trigrams(text: &str) -> Vec<[char; 3]> {
    let mut all = Vec::new();
    for word in text.to_lowercase().split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        let padded: Vec<char> = "  ".chars().chain(word.chars()).chain(std::iter::once(' ')).collect();
        all.extend(padded.windows(3).map(|t| [t[0], t[1], t[2]]));
    }
    all.sort_unstable();
    all.dedup();
    all
}

/// `pg_trgm`'s `similarity` of two texts' [`trigrams`]: those they share over those either has.
pub fn similarity(a: &[[char; 3]], b: &[[char; 3]]) -> f32 {
    let (mut i, mut j, mut shared) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => (i, j, shared) = (i + 1, j + 1, shared + 1),
        }
    }
    match a.len() + b.len() - shared {
        0 => 0.0,
        either => shared as f32 / either as f32,
    }
}

impl Default for Aliases {
    fn default() -> Self {
        Self::new(&HashMap::new())
    }
}

/// Whether two names are told apart however alike their vectors: two different
/// technologies, or names whose words differ in a letter or a number ("Project A").
pub fn distinct(a: &str, b: &str) -> bool {
    let (ta, tb) = (technologies(a), technologies(b));
    if !ta.is_empty() && !tb.is_empty() && ta != tb {
        return true;
    }
    let words = |s: &str| -> Vec<String> { normalise(s).split_whitespace().map(str::to_owned).collect() };
    let (wa, wb) = (words(a), words(b));
    let short = |w: &String| w.chars().count() <= 2 || w.chars().any(|c| c.is_ascii_digit());
    wa.iter().filter(|w| short(w)).any(|w| !wb.contains(w)) || wb.iter().filter(|w| short(w)).any(|w| !wa.contains(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_whatever_their_article_case_and_alias() {
        assert_eq!(normalise("The  Payment Module"), "payment module");
        assert_eq!(normalise("这个电商项目"), "电商项目");
        let aliases = Aliases::default();
        assert_eq!(aliases.canonical("PG"), Some("PostgreSQL"));
        assert_eq!(aliases.canonical("postgres"), Some("PostgreSQL"));
        assert_eq!(aliases.canonical("k8s"), Some("Kubernetes"));
        assert_eq!(aliases.canonical("阿里云"), Some("Alibaba Cloud"));
        assert_eq!(aliases.canonical("Alibaba Cloud"), Some("Alibaba Cloud"));
        assert_eq!(aliases.canonical("Atlas"), None);
        let extended = Aliases::new(&HashMap::from([("atl".to_owned(), "Atlas".to_owned())]));
        assert_eq!(extended.canonical("ATL"), Some("Atlas"));
        assert!(aliases.all_names_of("PostgreSQL").contains(&"pg".to_owned()));
    }

    #[test]
    fn trigram_similarity_is_pg_trgms() {
        // Each figure as PostgreSQL 18's pg_trgm gives it.
        for (a, b, expected) in [
            ("chekout project", "checkout project", 0.7368421),
            ("postgress", "PostgreSQL", 0.61538464),
            ("ab", "abc", 0.4),
            ("node.js", "nodejs", 0.5),
            ("c++ dev", "c dev", 1.0),
            ("priya", "priya sharma", 0.46153846),
            ("张伟", "张伟 同事", 0.5),
            ("a", "b", 0.0),
            ("", "x", 0.0),
        ] {
            assert_eq!(similarity(&trigrams(a), &trigrams(b)), expected, "{a} / {b}");
        }
    }

    #[test]
    fn names_that_differ_in_a_letter_or_technology_stay_apart() {
        assert!(distinct("Project A", "Project B"));
        assert!(distinct("PostgreSQL", "MySQL"));
        assert!(distinct("plan 2", "plan 3"));
        assert!(!distinct("payment module", "the payment module"));
        assert!(!distinct("checkout service", "checkout services"));
    }
}
