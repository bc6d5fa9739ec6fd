//! Prompts are files, not string literals: `jobs/prompts/NAME.md` holds the text
//! with `{{placeholders}}`, split into a system and a user part by a line
//! `<!-- user -->`; `NAME.schema.json` holds the JSON schema of the expected answer.
//! They are read and checked once, at startup ([`Prompts::load_dir`]).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use super::ModelError;

const USER_MARKER: &str = "<!-- user -->";

#[derive(Debug, Clone)]
pub struct Prompt {
    pub name: String,
    system: String,
    user: String,
    pub schema: serde_json::Value,
}

impl Prompt {
    pub fn load(dir: &Path, name: &str) -> Result<Self, ModelError> {
        let text_path = dir.join(format!("{name}.md"));
        let schema_path = dir.join(format!("{name}.schema.json"));
        let read = |path: &Path| {
            std::fs::read_to_string(path)
                .map_err(|e| ModelError::Config(format!("cannot read prompt {}: {e}", path.display())))
        };
        let text = read(&text_path)?;
        let schema = serde_json::from_str(&read(&schema_path)?)
            .map_err(|e| ModelError::Config(format!("{} is not valid JSON: {e}", schema_path.display())))?;
        Self::parse(name, &text, schema)
    }

    pub fn parse(name: &str, text: &str, schema: serde_json::Value) -> Result<Self, ModelError> {
        let (system, user) = text
            .split_once(USER_MARKER)
            .ok_or_else(|| ModelError::Config(format!("prompt {name} has no `{USER_MARKER}` line")))?;
        let system = system.trim().trim_start_matches("<!-- system -->").trim().to_owned();
        Ok(Self { name: name.to_owned(), system, user: user.trim().to_owned(), schema })
    }

    /// The system and user messages with every placeholder filled; a placeholder
    /// without a value is an error, not an empty string.
    pub fn render(&self, vars: &HashMap<&str, String>) -> Result<(String, String), ModelError> {
        Ok((fill(&self.name, &self.system, vars)?, fill(&self.name, &self.user, vars)?))
    }
}

/// Every prompt of a folder, by name, read once.
#[derive(Debug, Clone, Default)]
pub struct Prompts(BTreeMap<String, Prompt>);

impl Prompts {
    /// Every `NAME.md` of `dir` with its `NAME.schema.json`; a missing folder holds none.
    /// A prompt without its schema, or either malformed, is an error naming the file.
    pub fn load_dir(dir: &Path) -> Result<Self, ModelError> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Ok(Self::default()) };
        let mut prompts = BTreeMap::new();
        for entry in entries {
            let path = entry.map_err(|e| ModelError::Config(format!("cannot read {}: {e}", dir.display())))?.path();
            if path.extension().is_some_and(|ext| ext == "md") {
                let name = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_owned();
                prompts.insert(name.clone(), Prompt::load(dir, &name)?);
            }
        }
        Ok(Self(prompts))
    }

    pub fn get(&self, name: &str) -> Result<&Prompt, ModelError> {
        self.0.get(name).ok_or_else(|| ModelError::Config(format!("no prompt `{name}` (jobs/prompts/{name}.md)")))
    }

    /// Fails, naming the files, unless every one of `names` is there.
    pub fn require<'a>(&self, names: impl IntoIterator<Item = &'a str>) -> Result<(), ModelError> {
        names.into_iter().try_for_each(|name| self.get(name).map(drop))
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }
}

fn fill(name: &str, template: &str, vars: &HashMap<&str, String>) -> Result<String, ModelError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let end =
            rest[start..].find("}}").ok_or_else(|| ModelError::Config(format!("prompt {name}: unclosed `{{{{`")))?;
        let key = rest[start + 2..start + end].trim();
        let value =
            vars.get(key).ok_or_else(|| ModelError::Config(format!("prompt {name}: no value for {{{{{key}}}}}")))?;
        out.push_str(value);
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_missing_ones_are_errors() {
        let prompt =
            Prompt::parse("t", "Be brief.\n<!-- user -->\nSummarize: {{ text }} ({{n}})", serde_json::json!({}))
                .unwrap();
        let vars = HashMap::from([("text", "hello".to_owned()), ("n", "3".to_owned())]);
        let (system, user) = prompt.render(&vars).unwrap();
        assert_eq!(system, "Be brief.");
        assert_eq!(user, "Summarize: hello (3)");
        let err = prompt.render(&HashMap::from([("text", "x".to_owned())])).unwrap_err();
        assert!(err.to_string().contains("{{n}}"), "{err}");
        assert!(Prompt::parse("t", "no marker", serde_json::json!({})).is_err());
    }

    #[test]
    fn the_shipped_prompts_load() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../jobs/prompts");
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "md") {
                let name = path.file_stem().unwrap().to_str().unwrap();
                Prompt::load(&dir, name).unwrap_or_else(|e| panic!("{name}: {e}"));
            }
        }
    }
}
