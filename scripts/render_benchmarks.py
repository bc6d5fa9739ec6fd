"""Renders BENCHMARKS.md from the figures `scripts/benchmarks` keeps in benchmarks/.

    python3 scripts/render_benchmarks.py benchmarks > BENCHMARKS.md

Every figure in the page comes from those files; the prose around them says how they
were measured.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

METHOD = """\
# Benchmarks

Every figure on this page was measured by `scripts/benchmarks`, which runs the commands
named above each table on one machine and renders this page from what they print
(`benchmarks/*.json`; a test checks the page against those files). Run it yourself:

```
scripts/benchmarks                      # performance (engram bench --quick) and quality (engram eval)
BENCH_ARGS="search --clients 8" scripts/benchmarks bench
LOCOMO=path/to/locomo.json scripts/benchmarks locomo
LLM_URL=http://127.0.0.1:8091/v1 LLM_MODEL=qwen LLM_NAME="what the model is" scripts/benchmarks llm
```

Figures on a shared machine move by a fifth to a third from hour to hour. Compare two
binaries by running them alternately in one session, never against a table here.

## How performance is measured

`engram bench [embedder] [ingest] [search] [jobs] [reembed] [graph] [--quick]` runs
release code on the machine it runs on, in databases of its own (`engram_bench`,
`engram_bench_quick`), never the user's:

- **embedder**: the configured model's single-text latency and its throughput in
  batches of 64, on distinct generated sentences with the cache off.
- **ingest**: batched `POST /v1/events` from concurrent clients, then
  `summarize_sessions` over what was ingested.
- **search**: an engram on loopback over a generated corpus, concurrent clients sending
  query vectors and text queries, lookups over facts, raw turns and the graph, one in
  ten for a large user with HNSW indexes of their own, and the recall@10 of that user's
  vector search against an exact scan. The load generator runs in the same process as
  the server, so client, server and PostgreSQL share the cores. The corpus is built once
  and reused, and loaded into PostgreSQL's buffers before measuring. `--quick`: 300 users
  of 100 memories, 100 raw turns and 100 relations each, and a large user with 10,000 of
  each. Full size: 10,000 users of 100 memories and one of 100,000, as many raw turns, and
  a graph of 40 entities and 100 relations a user (1.15 M memories in all).
- **jobs**: `dedup` on a copy of the corpus, scored against the near-duplicates planted
  in it (one memory in 20), then `evict` scoring every memory.
- **reembed**: one run of `reembed` moving memories and raw turns to the configured model.
- **graph**: the extraction rules' sentences per second, English and Chinese mixed.

## How quality is measured

`engram eval` replays the conversations in `eval/` through the public API with the jobs
run on a simulated clock, then asks their questions through `POST /v1/search`; `engram
eval --locomo FILE` does the same for a LoCoMo dataset and also scores `/context` and
three transcript retrievers a user might pick instead. [docs/evaluation.md](docs/evaluation.md)
describes both. No LLM is configured, except in the section that says so.
"""


def load(directory: Path, name: str) -> dict | None:
    path = directory / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def number(value: float) -> str:
    """Whole numbers from 100 up, three significant digits below."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def ratio(value: float) -> str:
    return f"{value:.3f}"


def bench(report: dict, machine: dict) -> list[str]:
    out = ["## Performance", ""]
    out.append(f"Measured {report['date']} with `{report['command']}` on {machine_line(machine)}.")
    scenarios: dict[str, list[dict]] = {}
    for figure in report["figures"]:
        scenarios.setdefault(figure["scenario"], []).append(figure)
    for scenario, figures in scenarios.items():
        out += ["", f"### {scenario}", "", "| metric | value | unit |", "|---|---|---|"]
        out += [f"| `{f['metric']}` | {number(f['value'])} | {f['unit']} |" for f in figures]
    return out


def machine_line(machine: dict) -> str:
    return f"{machine['cpu']}, {machine['cores']} cores, {machine['memory_gib']} GiB"


QUALITY_COLUMNS = ["questions", "precision", "recall", "f1", "no_hit_accuracy"]


def scenarios(reports: dict[str, dict]) -> list[str]:
    out = ["## Memory quality: `engram eval`", ""]
    first = next(iter(reports.values()))
    out.append(
        f"Measured {first['date']}: the top {first['k']} results of each question, facts and insights (and "
        "relations in the graph scenario). "
        "`no_hit_accuracy` is the share of questions about nothing stored that got no result; "
        "\"–\" where a scenario asks no such question, or only such questions."
    )
    for model, report in reports.items():
        out += ["", f"### `{model}`", "", f"`{report['command']}`", ""]
        out += ["| scenario | " + " | ".join(QUALITY_COLUMNS) + " |", "|---" * (len(QUALITY_COLUMNS) + 1) + "|"]
        rows = list(report["categories"].items()) + [("**overall**", report["overall"])]
        for name, row in rows:
            only_no_hit = row["no_hit_questions"] == row["questions"]
            cells = [str(row["questions"])]
            cells += ["–" if only_no_hit else ratio(row[c]) for c in QUALITY_COLUMNS[1:-1]]
            cells.append(ratio(row["no_hit_accuracy"]) if row["no_hit_questions"] else "–")
            out.append(f"| {name} | " + " | ".join(cells) + " |")
        out += ["", f"{report['raw_events']} raw events became {report['memory_items']} memory items."]
    return out


LOCOMO_COLUMNS = ["evidence_recall_at_5", "evidence_recall_at_10", "evidence_in_context_256",
                  "evidence_in_context_1024", "answer_in_context_256", "answer_in_context_1024"]
CATEGORIES = {"1": "1 multi-hop", "2": "2 temporal", "3": "3 open-domain", "4": "4 single-hop"}


def locomo(reports: dict[str, dict]) -> list[str]:
    out = ["## Memory quality: LoCoMo", ""]
    first = next(iter(reports.values()))
    out.append(
        f"Measured {first['date']} on {first['locomo']['samples']} conversations, each question asked with every "
        "kind and `limit` 10. Evidence recall@k: the share of a question's evidence turns among the sources of "
        "the top k results (a summary takes its place but counts for nothing); evidence@n: the share shown by an "
        "n-token `/context`, as turns or as what was taken from them; answer@n: whether the answer as written "
        "is in that context. The transcript rows are search over the raw turns alone."
    )
    header = ("| retriever | category | questions | recall@5 | recall@10 | evidence@256 | evidence@1024 "
              "| answer@256 | answer@1024 |")
    for model, report in reports.items():
        out += ["", f"### `{model}`", "", f"`{report['command']}`", "", header, "|---|---|---|---|---|---|---|---|---|"]
        for name, retriever in report["locomo"]["retrievers"].items():
            rows = [(CATEGORIES.get(c, c), r) for c, r in retriever["categories"].items()]
            rows.append(("**overall**", retriever["overall"]))
            for i, (category, row) in enumerate(rows):
                label = name.replace("_", " ") if i == 0 else ""
                cells = [str(row["questions"])] + [ratio(row[c]) if c in row else "–" for c in LOCOMO_COLUMNS]
                out.append(f"| {label} | {category} | " + " | ".join(cells) + " |")
        out += ["", f"{report['raw_events']} raw events, {report['memory_items']} memory items."]
        if report["locomo"].get("diagnosis"):
            out += diagnosis(report["locomo"]["diagnosis"])
    return out


def diagnosis(report: dict) -> list[str]:
    out = ["", "Where the evidence turns are lost (`--diagnose`, [how to read it](docs/evaluation.md#locomo)): "
           "the share of evidence turns stored, taken into a memory, reached by the turns' or the memories' "
           "own list at 10, 20 and 50, by a session summary's at 10, kept in the lookup's top 10 and shown "
           "by the 1,024-token context; and of those lost, never a candidate within 50 or ranked out.", ""]
    out += ["| category | evidence turns | stored | remembered | any@10 | any@20 | any@50 | summary@10 "
            "| top 10 | in context | not a candidate | ranked out |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    rows = [(CATEGORIES.get(c, c), r) for c, r in report["categories"].items()]
    for category, row in rows + [("**overall**", report["overall"])]:
        any_, lost = row["candidates"]["any"], row["lost"]
        cells = [str(row["evidence_turns"]), ratio(row["stored"]), ratio(row["remembered"]),
                 ratio(any_["at_10"]), ratio(any_["at_20"]), ratio(any_["at_50"]),
                 ratio(row["candidates"]["summaries"]["at_10"]), ratio(row["top10"]), ratio(row["in_context_1024"]),
                 ratio(lost["not_a_candidate"]), ratio(lost["ranked_out"])]
        out.append(f"| {category} | " + " | ".join(cells) + " |")
    return out


def ranker(report: dict) -> list[str]:
    out = ["## The learned ranker, cross-validated", ""]
    out.append(
        "Evidence@10 of a client's lookup (every kind, `limit` 10, every turn one slot, a summary counting for "
        "nothing) on the LoCoMo development conversations, each conversation ranked by weights fitted on the "
        "others: the blend's order, the logistic model engram ships, and gradient-boosted trees over the same "
        "terms for comparison ([the fit](docs/evaluation.md#the-learned-ranker))."
    )
    out += ["", f"`{report['command']}`", "", "| held out | questions | blend | learned | trees |", "|---|---|---|---|---|"]
    for fold in report["folds"]:
        cells = [fold["held_out"], str(fold["questions"])] + [ratio(fold[m]["overall"]) for m in ("blend", "learned", "trees")]
        out.append("| " + " | ".join(cells) + " |")
    cv = report["cross_validated_evidence_at_10"]
    for category in list(CATEGORIES) + ["overall"]:
        label = "**overall**" if category == "overall" else CATEGORIES[category]
        cells = [label, ""] + [ratio(cv[m][category]) for m in ("blend", "learned", "trees")]
        out.append("| " + " | ".join(cells) + " |")
    a = report["abstention"]
    out += ["", f"`min_score` {a['min_score']}: {a['answerable']} questions with an answer hit {ratio(a['answerable_hit'])} "
            f"of the time, and {a['no_answer']} without one (LoCoMo's asked of another conversation, the scenarios' "
            f"about nothing stored) get no hit {ratio(a['no_answer_abstained'])} of the time; LoCoMo's category 5 "
            f"({a['locomo_category_5']} questions about what the other speaker said) {ratio(a['locomo_category_5_abstained'])}. "
            f"The context's floor is {report['context_min_score']}."]
    return out


def with_llm(report: dict) -> list[str]:
    out = ["## Memory quality with a local LLM: `engram eval --llm-url`", ""]
    out.append(
        f"Measured {report['date']} with {report['model']}, served by an OpenAI-compatible server on the same "
        "machine, against the same scenarios without an LLM (the default embedding model), category by "
        "category. An LLM's findings go beside the rules' ([models](docs/models.md#the-llm))."
    )
    out += ["", f"`{report['command']}`", ""]
    out += ["| scenario | F1 without | F1 with | precision with | recall with |", "|---|---|---|---|---|"]
    without, with_ = report["without_llm"], report["with_llm"]
    names = list(without["categories"]) + ["**overall**"]
    for name in names:
        a = without["overall"] if name == "**overall**" else without["categories"][name]
        b = with_["overall"] if name == "**overall**" else with_["categories"][name]
        if a["no_hit_questions"] == a["questions"]:
            continue
        cells = [ratio(a["f1"]), ratio(b["f1"]), ratio(b["precision"]), ratio(b["recall"])]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    out += ["", f"{without['raw_events']} raw events became {without['memory_items']} memory items without the LLM "
            f"and {with_['memory_items']} with it."]
    return out


def render(directory: Path) -> str:
    machine = load(directory, "machine") or {}
    parts = [METHOD.rstrip("\n")]
    if (report := load(directory, "bench")) is not None:
        parts.append("\n".join(bench(report, machine)))
    models = ["use-multilingual", "minilm"]
    evals = {m: r for m in models if (r := load(directory, f"eval-{m}")) is not None}
    if evals:
        parts.append("\n".join(scenarios(evals)))
    runs = ["use-multilingual", "use-multilingual-learned", "minilm"]
    locomos = {m: r for m in runs if (r := load(directory, f"locomo-{m}")) is not None}
    if locomos:
        parts.append("\n".join(locomo(locomos)))
    if (report := load(directory, "ranker-cv")) is not None:
        parts.append("\n".join(ranker(report)))
    if (report := load(directory, "eval-llm")) is not None:
        parts.append("\n".join(with_llm(report)))
    return "\n\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render(Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks")))
