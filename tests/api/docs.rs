//! The documentation holds to the code: the README stays short, every relative link
//! and anchor leads somewhere, the configuration page lists exactly the settings the
//! settings type accepts, and the routes the docs name are exactly those of
//! `/openapi.json`.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::Value;

use crate::helpers::spawn_app;

const README_MAX_LINES: usize = 250;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, ARCHITECTURE.md, BENCHMARKS.md, CHANGELOG.md, CONTRIBUTING.md, SECURITY.md
/// and every page under `docs/`.
fn pages() -> Vec<PathBuf> {
    let root = root();
    let mut pages: Vec<PathBuf> =
        ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md", "CHANGELOG.md", "CONTRIBUTING.md", "SECURITY.md"]
            .iter()
            .map(|p| root.join(p))
            .collect();
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// The page without its fenced code blocks, where `[x](y)` and `GET /x` are examples.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
        } else if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// The anchor a Markdown host gives a heading: lower case, punctuation dropped,
/// spaces as hyphens.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    prose(text).lines().filter_map(|line| line.strip_prefix('#')).map(|h| slug(h.trim_start_matches('#'))).collect()
}

#[test]
fn the_readme_is_short() {
    let lines = read(&root().join("README.md")).lines().count();
    assert!(lines <= README_MAX_LINES, "README.md has {lines} lines; at most {README_MAX_LINES}: move detail to docs/");
}

#[test]
fn every_relative_link_leads_to_a_file_and_heading_that_exist() {
    let link = regex::Regex::new(r"\]\(([^)\s]+)\)").unwrap();
    let mut broken = Vec::new();
    for page in pages() {
        let text = read(&page);
        for found in link.captures_iter(&prose(&text)) {
            let target = &found[1];
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = target.split_once('#').unwrap_or((target, ""));
            let path = if file.is_empty() { page.clone() } else { page.parent().unwrap().join(file) };
            if !path.exists() {
                broken.push(format!("{}: {target} (no such file)", page.display()));
            } else if !anchor.is_empty() && !anchors(&read(&path)).contains(anchor) {
                broken.push(format!("{}: {target} (no such heading)", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// The field names a struct's `Deserialize` accepts, read from the derive itself: it
/// hands them to `deserialize_struct`.
fn fields_of<T: for<'de> Deserialize<'de>>() -> &'static [&'static str] {
    struct Fields<'a>(&'a mut &'static [&'static str]);
    impl<'de> Deserializer<'de> for Fields<'_> {
        type Error = de::value::Error;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
            Err(de::Error::custom("not a struct"))
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = fields;
            Err(de::Error::custom("fields read"))
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
            unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
        }
    }
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(Fields(&mut fields));
    fields
}

/// Every `section.key` the settings type accepts.
fn setting_keys() -> BTreeSet<String> {
    use engram_base::configuration::*;
    let sections: HashMap<&str, &[&str]> = HashMap::from([
        ("server", fields_of::<ServerSettings>()),
        ("database", fields_of::<DatabaseSettings>()),
        ("ingest", fields_of::<IngestSettings>()),
        ("search", fields_of::<SearchSettings>()),
        ("rerank", fields_of::<RerankSettings>()),
        ("graph", fields_of::<GraphSettings>()),
        ("corrections", fields_of::<CorrectionSettings>()),
        ("log", fields_of::<LogSettings>()),
        ("embeddings", fields_of::<EmbeddingSettings>()),
        ("llm", fields_of::<LlmSettings>()),
        ("jobs", fields_of::<JobSettings>()),
        ("tls", fields_of::<TlsSettings>()),
        ("telemetry", fields_of::<TelemetrySettings>()),
        ("webhooks", fields_of::<WebhookSettings>()),
    ]);
    let top: BTreeSet<&str> = fields_of::<Settings>().iter().copied().collect();
    assert_eq!(top, sections.keys().copied().collect(), "a settings section is missing from this test");
    sections.iter().flat_map(|(section, keys)| keys.iter().map(move |key| format!("{section}.{key}"))).collect()
}

/// The keys of the configuration page's table: the first cell's `section.key`, and
/// `.other` after it for a second key of the same section.
fn documented_keys() -> BTreeSet<String> {
    let text = read(&root().join("docs/configuration.md"));
    let code = regex::Regex::new(r"`([a-z_.]+)`").unwrap();
    let mut keys = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let first_cell = line.split('|').nth(1).unwrap();
        let mut section = "";
        for found in code.captures_iter(first_cell) {
            let name = found.get(1).unwrap().as_str();
            if let Some(key) = name.strip_prefix('.') {
                keys.insert(format!("{section}.{key}"));
            } else if let Some((s, _)) = name.split_once('.') {
                section = s;
                keys.insert(name.to_owned());
            }
        }
    }
    keys
}

#[test]
fn the_configuration_page_lists_every_setting_and_only_those() {
    let actual = setting_keys();
    let documented = documented_keys();
    let undocumented: Vec<_> = actual.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&actual).collect();
    assert!(undocumented.is_empty(), "settings missing from docs/configuration.md: {undocumented:?}");
    assert!(unknown.is_empty(), "docs/configuration.md names settings that do not exist: {unknown:?}");
}

/// `METHOD /path` as the docs write a route, query string and trailing punctuation off.
fn documented_routes() -> BTreeSet<(String, String)> {
    let route = regex::Regex::new(r"\b(GET|POST|PATCH|PUT|DELETE) (/[A-Za-z0-9_{}/.\-]*)").unwrap();
    let mut routes = BTreeSet::new();
    for page in pages() {
        for found in route.captures_iter(&prose(&read(&page))) {
            let path = found[2].trim_end_matches(['.', '/']).to_owned();
            routes.insert((found[1].to_lowercase(), path));
        }
    }
    routes
}

#[tokio::test]
async fn the_routes_the_docs_name_are_the_routes_of_the_openapi_document() {
    let app = spawn_app().await;
    let doc: Value = app.get("/openapi.json").await.json().await.unwrap();
    let served: BTreeSet<(String, String)> = doc["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |method| (method.clone(), path.clone())))
        .collect();
    let documented = documented_routes();
    let undocumented: Vec<_> = served.difference(&documented).collect();
    let unknown: Vec<_> = documented.difference(&served).collect();
    assert!(undocumented.is_empty(), "routes of /openapi.json that no page of the docs names: {undocumented:?}");
    assert!(unknown.is_empty(), "routes the docs name that /openapi.json does not have: {unknown:?}");
}

#[test]
fn the_benchmarks_page_is_what_its_command_renders_from_the_measured_figures() {
    let rendered = std::process::Command::new("python3")
        .arg(root().join("scripts/render_benchmarks.py"))
        .arg(root().join("benchmarks"))
        .output()
        .expect("python3 runs");
    assert!(rendered.status.success(), "{}", String::from_utf8_lossy(&rendered.stderr));
    let page = read(&root().join("BENCHMARKS.md"));
    assert!(
        page == String::from_utf8(rendered.stdout).unwrap(),
        "BENCHMARKS.md differs from what scripts/render_benchmarks.py renders from benchmarks/: run scripts/benchmarks"
    );
}
