//! ARCHITECTURE.md holds to the code: the layers it draws are the imports (the crates'
//! own `Cargo.toml` keep crates apart; inside a crate this test does), no module grows
//! past 400 lines, its table of who writes which table is what the SQL says, only
//! `engram-language` holds text patterns, and the release binary carries no instruments.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|err| panic!("cannot read {}: {err}", path.display()))
}

/// A module of the layers picture: its name, its line (0 at the top) and the source
/// directory of the crate it is drawn in.
struct Drawn {
    level: usize,
    crate_src: String,
}

/// ARCHITECTURE.md's picture of the layers: a `[crate: dir]` line opens each crate,
/// then each line's modules, top first.
fn layers() -> HashMap<String, Drawn> {
    let text = read(&root().join("ARCHITECTURE.md"));
    let section = text.split("## Layers").nth(1).expect("ARCHITECTURE.md has its layers");
    let picture = section.split("```").nth(1).expect("the layers are drawn in a code block");
    let header = regex::Regex::new(r"^\[[a-z-]+: ([a-z/]+)\]$").unwrap();
    let module = regex::Regex::new(r"^([a-z_]+)(?:/|\.rs)$").unwrap();
    let mut drawn = HashMap::new();
    let mut crate_src = None;
    for (level, line) in picture.lines().filter(|line| !line.trim().is_empty()).enumerate() {
        if let Some(found) = header.captures(line.trim()) {
            crate_src = Some(found[1].to_owned());
            continue;
        }
        let crate_src = crate_src.clone().expect("the picture opens with a crate's line");
        let names = line.split("   ").next().unwrap();
        for name in names.split_whitespace().filter_map(|n| module.captures(n).map(|c| c[1].to_owned())) {
            drawn.insert(name, Drawn { level, crate_src: crate_src.clone() });
        }
    }
    drawn
}

/// Every `.rs` file of a crate's source directory, with its top module's name.
fn modules_of(crate_src: &str) -> Vec<(PathBuf, String)> {
    let base = root().join(crate_src);
    let mut found = Vec::new();
    let mut files = vec![base.clone()];
    while let Some(path) = files.pop() {
        if path.is_dir() {
            files.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        } else if path.extension().is_some_and(|e| e == "rs") {
            let relative = path.strip_prefix(&base).unwrap().to_string_lossy().into_owned();
            let top = relative.split('/').next().unwrap().trim_end_matches(".rs").to_owned();
            if top != "main" && top != "lib" {
                found.push((path, top));
            }
        }
    }
    found
}

#[test]
fn no_module_of_the_workspace_is_over_400_lines() {
    let long: Vec<String> = layers()
        .values()
        .map(|d| d.crate_src.clone())
        .collect::<BTreeSet<_>>()
        .iter()
        .flat_map(|crate_src| modules_of(crate_src))
        .map(|(path, _)| (read(&path).lines().count(), path))
        .filter(|(lines, _)| *lines > 400)
        .map(|(lines, path)| format!("{}: {lines} lines", path.strip_prefix(root()).unwrap().display()))
        .collect();
    assert!(long.is_empty(), "modules over 400 lines; split them by what they are for:\n{}", long.join("\n"));
}

#[test]
fn every_import_points_down_the_layers_architecture_md_draws() {
    let drawn = layers();
    let crates: BTreeSet<String> = drawn.values().map(|d| d.crate_src.clone()).collect();
    let mut on_disk: BTreeSet<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| format!("crates/{}/src", e.unwrap().file_name().to_string_lossy()))
        .collect();
    on_disk.insert("src".to_owned());
    assert_eq!(crates, on_disk, "ARCHITECTURE.md's crates and the workspace's differ");
    let import = regex::Regex::new(r"\b(?:crate|engram_[a-z]+)::([a-z_]+)").unwrap();
    let mut wrong = BTreeSet::new();
    for crate_src in &crates {
        for (path, top) in modules_of(crate_src) {
            let shown = path.strip_prefix(root()).unwrap().display().to_string();
            let Some(from) = drawn.get(&top).filter(|d| &d.crate_src == crate_src) else {
                wrong.insert(format!("{shown}: module `{top}` is not drawn in {crate_src}'s part of the layers"));
                continue;
            };
            for line in read(&path).lines().filter(|l| !l.trim_start().starts_with("//")) {
                for used in import.captures_iter(line) {
                    let to = &used[1];
                    match drawn.get(to) {
                        _ if to == top => {}
                        Some(below) if below.level > from.level => {}
                        Some(_) => {
                            wrong.insert(format!("{shown}: `{top}` uses `{to}`, which is not below it"));
                        }
                        None => {
                            wrong.insert(format!("{shown}: `{to}` is not in ARCHITECTURE.md's layers"));
                        }
                    }
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against ARCHITECTURE.md's layers:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The tables the migrations create.
fn tables() -> BTreeSet<String> {
    let create = regex::Regex::new(r"(?i)CREATE TABLE (?:IF NOT EXISTS )?([a-z_]+)").unwrap();
    let mut tables = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("migrations")).unwrap() {
        let text = read(&entry.unwrap().path());
        tables.extend(create.captures_iter(&text).map(|c| c[1].to_owned()));
    }
    tables
}

/// Which tables each file of the server's crates writes (`INSERT INTO`, `UPDATE`,
/// `DELETE FROM`), outside its unit tests; paths relative to the crate's `src/`.
fn writers() -> BTreeMap<String, BTreeSet<String>> {
    let tables = tables();
    let write = regex::Regex::new(r"(?i)\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+([a-z_]+)").unwrap();
    let mut writers: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for crate_src in ["src", "crates/base/src", "crates/core/src", "crates/server/src"] {
        for (path, _) in modules_of(crate_src) {
            let text = read(&path);
            let code = text.split("#[cfg(test)]\nmod tests").next().unwrap();
            let relative = path.strip_prefix(root().join(crate_src)).unwrap().to_string_lossy().into_owned();
            for found in write.captures_iter(code).filter(|c| tables.contains(&c[1])) {
                writers.entry(found[1].to_owned()).or_default().insert(relative.clone());
            }
        }
    }
    writers
}

/// ARCHITECTURE.md's table of owners: each table named in a row's first cell, with the
/// modules (a file, or a directory ending in `/`) its second cell names.
fn owners() -> BTreeMap<String, Vec<String>> {
    let text = read(&root().join("ARCHITECTURE.md"));
    let section = text.split("## Who writes which table").nth(1).expect("ARCHITECTURE.md has its table of owners");
    let quoted = regex::Regex::new(r"`([^`]+)`").unwrap();
    let mut owners = BTreeMap::new();
    for row in section.lines().take_while(|l| !l.starts_with("## ")).filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').collect();
        let modules: Vec<String> = quoted.captures_iter(cells[2]).map(|c| c[1].to_owned()).collect();
        for table in quoted.captures_iter(cells[1]) {
            owners.insert(table[1].to_owned(), modules.clone());
        }
    }
    owners
}

#[test]
fn every_table_is_written_only_by_the_modules_architecture_md_names() {
    let owners = owners();
    let mut wrong = BTreeSet::new();
    for (table, files) in writers() {
        let Some(modules) = owners.get(&table) else {
            wrong.insert(format!("`{table}` is written by {files:?} but has no row"));
            continue;
        };
        for file in &files {
            if !modules.iter().any(|m| if m.ends_with('/') { file.starts_with(m.as_str()) } else { file == m }) {
                wrong.insert(format!("`{table}` is written by {file}, which its row does not name"));
            }
        }
        for module in modules {
            if !files.iter().any(|f| if module.ends_with('/') { f.starts_with(module.as_str()) } else { f == module }) {
                wrong.insert(format!("`{table}`'s row names {module}, which does not write it"));
            }
        }
    }
    for table in tables() {
        if !owners.contains_key(&table) {
            wrong.insert(format!("`{table}` has no row"));
        }
    }
    assert!(
        wrong.is_empty(),
        "ARCHITECTURE.md's owners against the SQL:\n{}",
        wrong.into_iter().collect::<Vec<_>>().join("\n")
    );
}

/// The crates whose `Cargo.toml` names a dependency.
fn depending_on(dependency: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut manifests = vec![root().join("Cargo.toml")];
    manifests.extend(std::fs::read_dir(root().join("crates")).unwrap().map(|e| e.unwrap().path().join("Cargo.toml")));
    for manifest in manifests {
        let text = read(&manifest);
        let dependencies = text.split("[dependencies]").nth(1).unwrap_or("");
        let dependencies = dependencies.split("\n[").next().unwrap();
        if dependencies.lines().any(|l| l.split(['=', '.', ' ']).next() == Some(dependency)) {
            found.push(manifest.strip_prefix(root()).unwrap().display().to_string());
        }
    }
    found
}

#[test]
fn no_module_outside_engram_language_holds_a_text_pattern() {
    for dependency in ["regex", "aho-corasick"] {
        assert_eq!(
            depending_on(dependency),
            ["crates/language/Cargo.toml"],
            "only engram-language matches text by patterns: `{dependency}`"
        );
    }
    // The crates that match patterns, and what a pattern is written with: a flag group,
    // a word boundary or a class (`\b`, `\m`, `\p{…}`, `[[:alnum:]]`), in Rust's syntax
    // or PostgreSQL's.
    let pattern =
        regex::Regex::new(r"\b(?:regex|aho_corasick)::|\bRegex(?:Set)?\b|\bAhoCorasick\b|\(\?[i:]|\\[bmMp]|\[\[:")
            .unwrap();
    let mut holding = Vec::new();
    for (path, _) in layers()
        .values()
        .map(|d| d.crate_src.clone())
        .collect::<BTreeSet<_>>()
        .iter()
        .filter(|crate_src| *crate_src != "crates/language/src")
        .flat_map(|crate_src| modules_of(crate_src))
    {
        for (n, line) in read(&path).lines().enumerate() {
            if pattern.is_match(line) && !line.trim_start().starts_with("//") {
                holding.push(format!("{}:{}: {}", path.strip_prefix(root()).unwrap().display(), n + 1, line.trim()));
            }
        }
    }
    assert!(holding.is_empty(), "text patterns outside crates/language; move the rule there:\n{}", holding.join("\n"));
}

#[test]
fn the_release_binary_carries_no_instruments() {
    let manifest = read(&root().join("Cargo.toml"));
    assert!(
        manifest.contains(r#"engram-eval = { path = "crates/eval", optional = true }"#)
            && manifest.contains(r#"instruments = ["dep:engram-eval"]"#),
        "engram-eval is linked in only with the `instruments` feature"
    );
    let package = read(&root().join("scripts/package"));
    let build = package.lines().find(|l| l.trim_start().starts_with("cargo build")).expect("scripts/package builds");
    assert!(build.contains("--no-default-features"), "the release package leaves the instruments out: {build}");
}

/// Every `sqlx` statement of the service's crates, by file (under `crates/`, the binary's
/// as `src/…`): how many take their text from a literal, and how many build it at run time.
fn statements() -> BTreeMap<String, (usize, usize)> {
    let call = regex::Regex::new(
        r"sqlx::(?:query|query_as|query_scalar)(?:::<[^>]*>)?\(\s*|QueryBuilder::<Postgres>::new\(\s*|\.begin_with\(\s*|sqlx::raw_sql\(\s*",
    )
    .unwrap();
    let mut found = BTreeMap::new();
    let sources = ["crates/base/src", "crates/core/src", "crates/server/src", "src"];
    for dir in sources {
        for (path, _) in modules_of(dir) {
            let text = read(&path);
            for m in call.find_iter(&text) {
                let literal = text[m.end()..].starts_with(['"', 'r']);
                let shown = path.strip_prefix(root()).unwrap().display().to_string();
                let shown = shown.strip_prefix("crates/").unwrap_or(&shown).to_owned();
                let counts: &mut (usize, usize) = found.entry(shown).or_default();
                // `raw_sql` with a literal is a setting or DDL: nothing of the schema to check.
                if literal && !m.as_str().starts_with("sqlx::raw_sql") {
                    counts.0 += 1;
                } else if !literal {
                    counts.1 += 1;
                }
            }
        }
    }
    found
}

/// ARCHITECTURE.md's table of statements built at run time: file, and how many.
fn built_at_run_time() -> BTreeMap<String, usize> {
    let text = read(&root().join("ARCHITECTURE.md"));
    let section = text.split("## SQL checked when it compiles").nth(1).expect("ARCHITECTURE.md has its SQL section");
    section
        .lines()
        .take_while(|l| !l.starts_with("## "))
        .filter(|l| l.starts_with("| `"))
        .map(|row| {
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            (cells[1].trim_matches('`').to_owned(), cells[2].parse().expect("a count in the second cell"))
        })
        .collect()
}

#[test]
fn every_fixed_statement_is_checked_when_it_compiles_and_architecture_md_names_the_rest() {
    let listed = built_at_run_time();
    let mut wrong = BTreeSet::new();
    let statements = statements();
    for (file, (fixed, built)) in &statements {
        if *fixed > 0 {
            wrong.insert(format!("{file}: {fixed} fixed statement(s) outside `query!`, `query_as!`, `query_scalar!`"));
        }
        if *built != listed.get(file).copied().unwrap_or(0) {
            wrong.insert(format!(
                "{file}: {built} statement(s) built at run time, ARCHITECTURE.md says {:?}",
                listed.get(file)
            ));
        }
    }
    for file in listed.keys() {
        if statements.get(file).is_none_or(|(_, built)| *built == 0) {
            wrong.insert(format!("{file} is in ARCHITECTURE.md's table but builds no statement"));
        }
    }
    assert!(wrong.is_empty(), "the SQL against ARCHITECTURE.md:\n{}", wrong.into_iter().collect::<Vec<_>>().join("\n"));
    assert!(listed.values().sum::<usize>() <= 40, "more than 40 statements built at run time");
}
