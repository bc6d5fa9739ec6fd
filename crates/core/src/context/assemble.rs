//! Packing the block: sections in order, each line only while it fits its section's
//! share and the budget, no line twice.

use super::{Context, ContextItem, estimate_tokens};
use engram_base::domain::ResultKind;

/// One candidate line of the block.
pub struct Candidate {
    pub id: String,
    pub kind: ResultKind,
    pub content: String,
}

/// A section of the block: at most `share` of the budget, its lines best first.
pub struct Section {
    pub name: &'static str,
    pub heading: &'static str,
    pub share: f64,
    pub lines: Vec<Candidate>,
    /// The share of the budget it leaves to the sections after it.
    pub leave: f64,
    /// Shown before the sections that are not, wherever it stands in the order the
    /// budget is shared in.
    pub first: bool,
}

/// A section as the block shows it: whether it comes first, its heading, its lines with
/// their items.
type Taken = (bool, &'static str, Vec<(String, ContextItem)>);

/// Assembles sections: their lines are taken in the sections' order, each line only if
/// it still fits its section's share, what it leaves and the budget; the block shows the
/// sections marked `first` before the others.
pub fn assemble(sections: Vec<Section>, max_tokens: usize) -> Context {
    let mut used = 0;
    let mut seen = std::collections::HashSet::new();
    let mut taken: Vec<Taken> = Vec::new();
    for Section { name, heading, share, lines, leave, first } in sections {
        let part = |share: f64| (share * max_tokens as f64).floor() as usize;
        let cap = (used + part(share)).min(max_tokens - part(leave).min(max_tokens));
        let heading_tokens = estimate_tokens(heading) + 1;
        let mut kept = Vec::new();
        for candidate in lines {
            if seen.contains(&candidate.id) || candidate.content.trim().is_empty() {
                continue;
            }
            let line = line_of(&candidate.content);
            let tokens = estimate_tokens(&line) + 1;
            // A section's heading, and the blank line before every section but one.
            let extra = if kept.is_empty() { heading_tokens + usize::from(!taken.is_empty()) } else { 0 };
            if used + tokens + extra > max_tokens.min(cap) {
                continue;
            }
            seen.insert(candidate.id.clone());
            used += tokens + extra;
            kept.push((line, ContextItem { id: candidate.id, kind: candidate.kind, section: name, tokens }));
        }
        if !kept.is_empty() {
            taken.push((first, heading, kept));
        }
    }
    taken.sort_by_key(|(first, ..)| !first);
    let (mut text, mut items) = (String::new(), Vec::new());
    for (_, heading, kept) in taken {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(heading);
        text.push('\n');
        for (line, item) in kept {
            text.push_str(&line);
            text.push('\n');
            items.push(item);
        }
    }
    Context { text, tokens: used, max_tokens, items }
}

/// A candidate's line as the block writes it: a bullet, on one line.
fn line_of(content: &str) -> String {
    format!("- {}", content.replace('\n', " "))
}

/// The tokens `lines` take under `heading`, as [`assemble`] counts them (with the blank
/// line before the heading).
pub fn tokens_of(lines: &[Candidate], heading: &str) -> usize {
    let lines: usize = lines.iter().map(|c| estimate_tokens(&line_of(&c.content)) + 1).sum();
    if lines == 0 { 0 } else { lines + estimate_tokens(heading) + 2 }
}

/// The latest of `turns` (oldest first) that fit `budget` with their heading, oldest first.
pub(super) fn latest_within(mut turns: Vec<Candidate>, heading: &str, budget: usize) -> Vec<Candidate> {
    let mut used = estimate_tokens(heading) + 2;
    let mut keep = 0;
    for turn in turns.iter().rev() {
        let tokens = estimate_tokens(&line_of(&turn.content)) + 1;
        if used + tokens > budget {
            break;
        }
        used += tokens;
        keep += 1;
    }
    turns.split_off(turns.len() - keep)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: &str, content: &str) -> Candidate {
        Candidate { id: id.into(), kind: ResultKind::Fact, content: content.into() }
    }

    #[test]
    fn tokens_count_cjk_characters_one_each() {
        assert_eq!(estimate_tokens("abcd"), 1);
        assert_eq!(estimate_tokens("abcde"), 2);
        assert_eq!(estimate_tokens("我叫李明"), 4);
        assert_eq!(estimate_tokens(""), 0);
    }

    fn section(name: &'static str, share: f64, lines: Vec<Candidate>) -> Section {
        Section { name, heading: "## heading", share, lines, leave: 0.0, first: false }
    }

    #[test]
    fn the_block_never_exceeds_its_budget_and_skips_duplicates() {
        let sections = || {
            vec![
                section("profile", 1.0, vec![c("1", "Name: Alice"), c("2", "Lives in Lisbon")]),
                section("relevant", 1.0, vec![c("1", "Name: Alice"), c("3", &"long ".repeat(50))]),
            ]
        };
        for budget in [0, 5, 10, 20, 80, 1000] {
            let context = assemble(sections(), budget);
            assert!(context.tokens <= budget, "{budget}: {}", context.tokens);
            assert!(estimate_tokens(&context.text) <= context.tokens, "the estimate covers the text");
        }
        let all = assemble(sections(), 1000);
        assert_eq!(all.items.iter().map(|i| i.id.as_str()).collect::<Vec<_>>(), vec!["1", "2", "3"]);
        assert!(all.text.starts_with("## heading\n- Name: Alice\n"));
    }

    #[test]
    fn a_section_keeps_to_its_share_and_leaves_the_rest_to_the_next() {
        let many: Vec<Candidate> = (0..40).map(|i| c(&format!("p{i}"), "a profile fact of some length")).collect();
        let context =
            assemble(vec![section("profile", 0.2, many), section("relevant", 1.0, vec![c("r", "the answer")])], 200);
        let profile: usize = context.items.iter().filter(|i| i.section == "profile").map(|i| i.tokens).sum();
        assert!(profile <= 40, "{profile}");
        assert!(context.items.iter().any(|i| i.id == "r"));
    }

    #[test]
    fn working_memory_keeps_the_latest_turns_in_order() {
        let turns: Vec<Candidate> = (0..30).map(|i| c(&format!("t{i}"), &format!("turn number {i}"))).collect();
        let kept = latest_within(turns, super::super::WORKING_HEADING, 40);
        let ids: Vec<&str> = kept.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids.last(), Some(&"t29"));
        assert!(ids.len() > 2 && ids.len() < 30, "{ids:?}");
        assert!(ids.windows(2).all(|w| w[0] < w[1] || w[0].len() < w[1].len()), "oldest first: {ids:?}");
    }
}
