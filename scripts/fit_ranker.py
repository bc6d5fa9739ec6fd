#!/usr/bin/env python3
"""Fits engram's learned ranker on labelled candidates and validates it by conversation.

    engram eval --locomo locomo.json --features locomo.jsonl     # with search.ranker = "blend"
    engram eval --features scenarios.jsonl
    .engram/fit/bin/python scripts/fit_ranker.py locomo.jsonl scenarios.jsonl \\
        --out ranker/learned.json --report benchmarks/ranker-cv.json

The input is what `engram eval --locomo FILE --features OUT` and `engram eval
--features OUT` (the scenarios of eval/) write: one line per question (its evidence
turns) and one per candidate of its lookup (its features, the turns it names, whether
it is evidence). LoCoMo's questions with an answer are ranked in the folds; the
scenarios' questions and those asked where nothing answers them (each LoCoMo question
asked of the conversation before, and the scenarios' questions about nothing stored)
only train, so the model learns that the best of what is stored is not always relevant. The model is a logistic regression over the
features and the products of similarity and keyword share with each tier, so a turn's
similarity and a fact's may weigh differently. Its output is a probability of relevance.
A candidate's place among the others (its similarity and keyword rank, its gap to the
best similarity) is left out: it lifts the best candidate of a question nothing answers.

Validation is leave-one-conversation-out: each conversation's questions are ranked by a
model fitted on the others, never on its own turns. For each fold and overall the
report gives evidence@10 (a client's top 10 as engram serves it: every turn one slot,
a summary counting for nothing) of the blend, of the fitted model, and of gradient-
boosted trees for comparison. The shipped weights are fitted on every conversation.

The abstention threshold (`min_score`) is the probability that best tells questions
with an answer (each by its best candidate) from those without, each side weighing half.
LoCoMo's category 5 is reported beside it. The context's floor (`context_min_score`)
keeps 95% of the evidence candidates.

Needs numpy and scikit-learn only (scripts/fit_ranker.requirements.txt); engram itself
reads the JSON it writes and needs neither.
"""

import argparse
import collections
import json
import math
import os
import sys

import numpy as np
from sklearn.ensemble import HistGradientBoostingClassifier
from sklearn.linear_model import LogisticRegression

BASE = [
    "similarity", "keyword", "own_keyword", "fact", "insight", "own_turn", "other_turn", "summary",
    "relation", "decay", "graph", "recency", "inside_window", "outside_window", "names", "says_when",
    "answers_when", "length", "similarity_rank", "keyword_rank", "similarity_gap", "session_best",
    "session_turns",
]
TIERS = ["fact", "insight", "own_turn", "other_turn", "summary", "relation"]
# A candidate's place among the others lifts a question's best candidate whatever it is,
# so a question nothing answers would hit: those features are shown, not weighed.
PLACES = ["similarity_rank", "keyword_rank", "similarity_gap"]
TERMS = [f for f in BASE if f not in PLACES] + [f"{part}*{tier}" for part in ("similarity", "keyword") for tier in TIERS]
C = 1.0
CONTEXT_KEEPS = 0.95


def read(path):
    questions, candidates = {}, collections.defaultdict(list)
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if row["type"] == "question":
                questions[row["id"]] = row
            else:
                candidates[row["question"]].append(row)
    return questions, candidates


def row_values(features):
    values = []
    for term in TERMS:
        v = 1.0
        for factor in term.split("*"):
            v *= float(features.get(factor) or 0.0)
        values.append(v)
    return values


def served_top(ranked, k=10):
    """A client's top k: a candidate whose turns all come with a better one is skipped
    (summaries and relations excepted), as the lookup's one slot per turn."""
    covered, top = set(), []
    for c in ranked:
        dia = c["dia"]
        if c["kind"] not in ("session_summary", "period_summary", "relation") and dia:
            if all(d in covered for d in dia):
                continue
            covered.update(dia)
        top.append(c)
        if len(top) == k:
            break
    return top


def recall(question, top):
    evidence = set(question["evidence"])
    if not evidence:
        return None
    found = {d for c in top for d in c["dia"]}
    return len(evidence & found) / len(evidence)


def matrix(qids, candidates):
    xs, ys = [], []
    for q in qids:
        for c in candidates[q]:
            xs.append(row_values(c["features"]))
            ys.append(1 if c["evidence"] else 0)
    return np.array(xs), np.array(ys)


def evaluate(qids, questions, candidates, score):
    """Mean evidence@10 over `qids` with candidates ordered by `score`, per category."""
    by_category = collections.defaultdict(list)
    for q in qids:
        cands = candidates[q]
        scores = score(cands) if cands else []
        ranked = [c for _, _, c in sorted(zip([-s for s in scores], range(len(cands)), cands), key=lambda t: t[:2])]
        r = recall(questions[q], served_top(ranked))
        if r is not None:
            by_category[questions[q]["category"]].append(r)
    out = {str(k): sum(v) / len(v) for k, v in sorted(by_category.items())}
    every = [r for v in by_category.values() for r in v]
    out["overall"] = sum(every) / len(every) if every else 0.0
    out["questions"] = len(every)
    return out


def fit_logistic(x, y):
    model = LogisticRegression(C=C, max_iter=5000)
    model.fit(x, y)
    return model


def threshold(answerable, unanswerable):
    """The probability that best tells questions with an answer (their best candidate at
    or above it: a hit) from those without (below it: no hit), each side weighing half;
    and the share of each it gets right."""
    best, chosen = -1.0, (0.0, 0.0, 0.0)
    for t in sorted(set(answerable + unanswerable)):
        hit = sum(a >= t for a in answerable) / max(len(answerable), 1)
        abstain = sum(u < t for u in unanswerable) / max(len(unanswerable), 1)
        if (hit + abstain) / 2 > best:
            best, chosen = (hit + abstain) / 2, (t, hit, abstain)
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("features", nargs="+")
    parser.add_argument("--out", required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--embedding-model", default="use-multilingual")
    args = parser.parse_args()

    questions, candidates = {}, collections.defaultdict(list)
    for path in args.features:
        q, c = read(path)
        questions.update(q)
        candidates.update(c)
    # LoCoMo's questions with an answer (categories 1-4) are ranked in the folds; the
    # scenarios' (category -1) and those asked where nothing answers them (0) only train.
    answerable = [q for q, row in questions.items() if 1 <= row["category"] <= 4]
    training_only = [q for q, row in questions.items() if row["category"] in (-1, 0)]
    samples = sorted({questions[q]["sample"] for q in answerable})
    blend = lambda cands: [-c["rank"] for c in cands]  # the order engram served

    folds, all_blend, all_learned, all_trees = [], {}, {}, {}
    for held in samples:
        train = [q for q in answerable + training_only if questions[q]["sample"] != held]
        test = [q for q in answerable if questions[q]["sample"] == held]
        x, y = matrix(train, candidates)
        model = fit_logistic(x, y)
        trees = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.05, max_leaf_nodes=15, random_state=0)
        trees.fit(x, y)
        learned = lambda cands, m=model: list(m.predict_proba(np.array([row_values(c["features"]) for c in cands]))[:, 1])
        boosted = lambda cands, m=trees: list(m.predict_proba(np.array([row_values(c["features"]) for c in cands]))[:, 1])
        fold = {
            "held_out": held,
            "questions": len(test),
            "blend": evaluate(test, questions, candidates, blend),
            "learned": evaluate(test, questions, candidates, learned),
            "trees": evaluate(test, questions, candidates, boosted),
        }
        folds.append(fold)
        for q in test:
            all_blend[q] = all_learned[q] = all_trees[q] = None
        print(f"{held}: blend {fold['blend']['overall']:.3f}  learned {fold['learned']['overall']:.3f}  "
              f"trees {fold['trees']['overall']:.3f}  ({len(test)} questions)", file=sys.stderr)

    def pooled(name):
        total = sum(f[name]["overall"] * f[name]["questions"] for f in folds)
        count = sum(f[name]["questions"] for f in folds)
        cats = collections.defaultdict(lambda: [0.0, 0])
        for f in folds:
            for k, v in f[name].items():
                if k not in ("overall", "questions"):
                    # per-category means are re-weighted by the fold's questions of that category
                    n = sum(1 for q in answerable if questions[q]["sample"] == f["held_out"] and str(questions[q]["category"]) == k
                            and questions[q]["evidence"])
                    cats[k][0] += v * n
                    cats[k][1] += n
        out = {k: s / n for k, (s, n) in sorted(cats.items()) if n}
        out["overall"] = total / count
        return out

    cross_validated = {name: pooled(name) for name in ("blend", "learned", "trees")}

    # The shipped model: every conversation.
    x, y = matrix(answerable + training_only, candidates)
    model = fit_logistic(x, y)
    weights = {term: round(float(w), 5) for term, w in zip(TERMS, model.coef_[0]) if abs(w) >= 1e-6}
    bias = round(float(model.intercept_[0]), 5)

    def probability(features):
        z = bias + sum(w * row_values(features)[TERMS.index(t)] for t, w in weights.items())
        return 1 / (1 + math.exp(-z))

    best = lambda q: max((probability(c["features"]) for c in candidates[q]), default=0.0)
    with_answer = [q for q, row in questions.items() if 1 <= row["category"] <= 4 or row["category"] == -1]
    no_answer = [q for q, row in questions.items() if row["category"] == 0]
    min_score, hits, abstains = threshold([best(q) for q in with_answer], [best(q) for q in no_answer])
    adversarial = [best(q) for q, row in questions.items() if row["category"] == 5]
    adversarial_abstained = sum(b < min_score for b in adversarial) / max(len(adversarial), 1)
    evidence_p = sorted(probability(c["features"]) for q in answerable for c in candidates[q] if c["evidence"])
    context_min = evidence_p[int(len(evidence_p) * (1 - CONTEXT_KEEPS))] if evidence_p else 0.0

    document = {
        "format": "engram-ranker",
        "version": 1,
        "embedding_model": args.embedding_model,
        "fitted": {
            "by": "scripts/fit_ranker.py",
            "model": "logistic regression, L2, C = %g" % C,
            "conversations": len(samples),
            "questions": len(answerable),
            "training_only_questions": len(training_only),
            "candidates": int(len(y)),
        },
        "bias": bias,
        "weights": weights,
        "min_score": round(min_score, 4),
        "context_min_score": round(context_min, 4),
    }
    with open(args.out, "w") as f:
        json.dump(document, f, indent=2, ensure_ascii=False)
        f.write("\n")
    report = {
        "command": "scripts/fit_ranker.py " + " ".join(os.path.basename(a) if a in args.features else a for a in sys.argv[1:]),
        "folds": folds,
        "cross_validated_evidence_at_10": cross_validated,
        "abstention": {"min_score": document["min_score"], "answerable_hit": round(hits, 4),
                       "no_answer_abstained": round(abstains, 4), "answerable": len(with_answer),
                       "no_answer": len(no_answer), "locomo_category_5_abstained": round(adversarial_abstained, 4),
                       "locomo_category_5": len(adversarial)},
        "context_min_score": document["context_min_score"],
    }
    with open(args.report, "w") as f:
        json.dump(report, f, indent=2)
        f.write("\n")
    for name, figures in cross_validated.items():
        print(f"cross-validated {name}: " + "  ".join(f"{k} {v:.3f}" for k, v in figures.items()), file=sys.stderr)
    print(f"min_score {document['min_score']} (answerable hit {hits:.3f}, no answer abstained {abstains:.3f}, "
          f"category 5 abstained {adversarial_abstained:.3f}), "
          f"context_min_score {document['context_min_score']}", file=sys.stderr)


if __name__ == "__main__":
    main()
