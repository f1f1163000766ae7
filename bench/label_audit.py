"""How well `bertkit audit` finds wrong labels: labels flipped at random in a known share of real
data, then the audit run as a user runs it, and its flags compared with the flips.

  sst2   --examples SST-2 training sentences (default 1,000, seeded; a sample no test reads), a
         --share of them (default 10 %) given the other label; the packaged MiniLM fine-tuned per
         fold (2 epochs at 1e-4, head 1e-3, max length 64).
  topics --examples English sentences (default 1,000, seeded, a quarter from each source) named by
         where they come from: news (CoNLL-2003's Reuters sentences), medicine (PubMed sentences),
         science (SciCite's citation sentences), film (IMDb reviews, one sentence each); the
         tokenised sources joined back as written text. The stand-in here for AG News (news by
         topic, not in ../shared/data): a set a fine-tuned model gets mostly right. A --share given
         another of the four, at random; MiniLM as for sst2.
  conll  --sentences CoNLL-2003 training sentences (default 600, seeded); a --share of the words
         that carry an entity tag given another entity type (B-PER as B-LOC: the annotator's
         slip), the I- words of that entity with it; MiniLM per fold (3 epochs at 1e-4).

For each: precision (of the flagged examples or words, the share truly flipped), recall (of the
flips, the share flagged), precision_top (of the most suspect flags, as many as were flipped, the
share truly flipped: what a user who reads the report from the top finds), the estimated share
of wrong labels, and the audit's wall time; then, from the audit's held_out_probabilities.npz,
the same for each of cleanlab's filters side by side (`filter_by`: the default
prune_by_noise_rate, prune_by_class, both, confident_learning, and
predicted_neq_given, the plain "the model disagrees" baseline).

Usage: python bench/label_audit.py [--sets sst2,topics,conll] [--examples 1000] [--sentences 600]
       [--share 0.1] [--folds 5] [--ner-epochs 3] [--seed 11] [--reuse]
Writes bench/results/label_audit.json and prints a table.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import random
import re
import subprocess
import sys
import time

from common import DATA, ROOT, minilm_path, require, save, table

OUT = ROOT / "outputs" / "bench-audit"


def _run(config, folder) -> tuple[list[dict], dict, float | None]:
    started = time.perf_counter()
    if ARGS.reuse and (folder / "summary.json").is_file():  # the audit of an earlier run, read again
        issues = [json.loads(x) for x in (folder / "label_issues.jsonl").read_text().splitlines()]
        return issues, json.loads((folder / "summary.json").read_text()), None
    done = subprocess.run([sys.executable, "-m", "bertkit", "audit", "-c", str(config), "-k", str(ARGS.folds),
                           "-o", str(folder), "--overwrite"], cwd=ROOT)  # fmt: skip
    if done.returncode != 0:
        sys.exit(f"the audit failed (exit {done.returncode})")
    seconds = time.perf_counter() - started
    issues = [json.loads(x) for x in (folder / "label_issues.jsonl").read_text().splitlines()]
    return issues, json.loads((folder / "summary.json").read_text()), seconds


def _row(name: str, ranked: list, flipped: set, units: int, summary: dict, seconds: float | None) -> dict:
    """`ranked`: the flags, most suspect first."""
    flagged = set(ranked)
    hits = len(flagged & flipped)
    top = ranked[: len(flipped)]  # as many as were flipped, most suspect first
    return {
        "set": name, "units": units, "flipped": len(flipped), "flagged": len(flagged), "found": hits,
        "precision": round(hits / max(len(flagged), 1), 3), "recall": round(hits / max(len(flipped), 1), 3),
        "precision_top": round(len(set(top) & flipped) / max(len(top), 1), 3),
        "estimated_share": summary["estimated_error_share"], "held_out_accuracy": summary["out_of_fold_accuracy"],
        "minutes": None if seconds is None else round(seconds / 60, 1),
    }  # fmt: skip


FILTERS = ("prune_by_noise_rate", "prune_by_class", "both", "confident_learning", "predicted_neq_given")


def filters(folder, given: list[int], flipped_rows: set[int]) -> list[dict]:
    """Precision and recall of each cleanlab filter on the audit's held-out probabilities (a row
    per example, or per word), given labels `given` (row order), flips `flipped_rows`."""
    import numpy as np
    from cleanlab.filter import find_label_issues

    probs = np.load(folder / "held_out_probabilities.npz")["probabilities"].astype(np.float64)
    probs /= probs.sum(axis=1, keepdims=True)
    out = []
    for name in FILTERS:
        found = set(np.flatnonzero(find_label_issues(np.asarray(given), probs, filter_by=name)).tolist())
        hits = len(found & flipped_rows)
        out.append({"filter": name, "flagged": len(found), "precision": round(hits / max(len(found), 1), 3),
                    "recall": round(hits / max(len(flipped_rows), 1), 3)})  # fmt: skip
    return out


def sst2() -> dict:
    rows = list(csv.reader(require(DATA / "en/sst2/train.tsv").open(encoding="utf-8"), delimiter="\t"))[1:]
    rng = random.Random(ARGS.seed)
    chosen = rng.sample(rows, ARGS.examples)
    flipped = set(rng.sample(range(len(chosen)), round(ARGS.share * len(chosen))))
    given = [str(1 - int(label) if i in flipped else int(label)) for i, (_, label) in enumerate(chosen)]
    return _classify("sst2", "SST-2 (flipped sentences)", [text for text, _ in chosen], given, flipped)


def _classify(name: str, title: str, texts: list[str], given: list[str], flipped: set[int]) -> dict:
    """The audit of `texts` labelled `given` (the changed ones among them: rows `flipped`) as a
    user runs it: a CSV, the packaged MiniLM fine-tuned per fold, then its flags against the changes."""
    work = OUT / f"{name}-{ARGS.seed}"
    work.mkdir(parents=True, exist_ok=True)
    data = work / "train.csv"
    with data.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["text", "label"])
        writer.writerows(zip(texts, given, strict=True))
    config = work / "audit.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 64\ndata:\n  train: {data}\n"
        "train:\n  epochs: 2\n  batch_size: 16\n  learning_rate: 1.0e-4\n  head_learning_rate: 1.0e-3\n"
        "  warmup_ratio: 0.1\n  seed: 42\nclassify:\n  strategy: finetune\n"
        f"output_dir: {work / 'run'}\n"
    )
    issues, summary, seconds = _run(config, work / "audit")
    ranked = [r["line"] - 2 for r in issues]  # line 2 is the first example
    row = _row(title, ranked, flipped, len(texts), summary, seconds)
    row["filters"] = filters(work / "audit", [summary["labels"].index(g) for g in given], flipped)
    return row


def _written(tokens: str) -> str:
    """A tokenised sentence (spaces around punctuation) joined back as it was written."""
    parts = tokens.split()
    # an odd number of quotes, the first not opening the sentence: it began inside a quotation
    opened = parts.count('"') % 2 == 1 and parts[:1] != ['"']
    words: list[str] = []
    for token in parts:
        closing = token == '"' and opened
        opened ^= token == '"'
        if words and (closing or set(words[-1]) <= set('"([$') and not words[-1].endswith('"') or words[-1] == '"'
                      and opened):  # fmt: skip
            words[-1] += token
        else:
            words.append(token)
    text = re.sub(r" ([.,;:!?%)\]]|'s|n't|'re|'ve|'ll|'d)(?=[\s\"]|$)", r"\1", " ".join(words))
    return text.replace(" - ", "-")


def _long_enough(text: str) -> bool:
    words = text.split()
    return 10 <= len(words) <= 60 and sum(w.isalpha() for w in words) >= 0.6 * len(words)


def _topic_sentences() -> dict[str, list[str]]:
    conll = require(DATA / "en/conll2003/eng.train").read_text(encoding="utf-8").split("\n\n")
    news = [" ".join(line.split()[0] for line in s.strip().splitlines()) for s in conll]
    news = [s for s in news if not s.startswith("-DOCSTART-")]
    medicine = require(DATA / "en/text/biomed_sentences_tokenized.txt").read_text(encoding="utf-8").splitlines()
    science = require(DATA / "en/text/scicite_sentences.txt").read_text(encoding="utf-8").splitlines()
    film = []
    with gzip.open(require(DATA / "en/imdb/train.jsonl.gz"), "rt", encoding="utf-8") as reviews:
        for k, line in enumerate(reviews):
            if k % 10:  # every tenth review, the first sentence long enough
                continue
            text = json.loads(line)["text"].replace("<br />", " ")
            film += [s.strip() for s in re.split(r"(?<=[.!?])\s+", text)][:1]
    found = {
        "news": [_written(s) for s in news],
        "medicine": [_written(s) for s in medicine],
        "science": science,
        "film": film,
    }
    return {name: sorted({s for s in texts if _long_enough(s)}) for name, texts in found.items()}


def topics() -> dict:
    rng = random.Random(ARGS.seed)
    sources = _topic_sentences()
    names = sorted(sources)
    each = ARGS.examples // len(names)
    chosen = [(text, name) for name in names for text in rng.sample(sources[name], each)]
    rng.shuffle(chosen)
    flipped = set(rng.sample(range(len(chosen)), round(ARGS.share * len(chosen))))
    given = [label for _, label in chosen]
    for i in sorted(flipped):
        given[i] = rng.choice([n for n in names if n != given[i]])
    texts = [text for text, _ in chosen]
    return _classify("topics", "news, medicine, science, film (flipped sentences)", texts, given, flipped)


def conll() -> dict:
    text = require(DATA / "en/conll2003/eng.train").read_text(encoding="utf-8")
    sentences = [s for s in text.split("\n\n") if s.strip() and not s.startswith("-DOCSTART-")]
    rng = random.Random(ARGS.seed)
    chosen = [[line.split() for line in s.strip().splitlines()] for s in rng.sample(sentences, ARGS.sentences)]
    # IOB1 in the file: read tags as entity types; an entity is a run of one type (a B- starts a new one)
    entities = []
    for i, rows in enumerate(chosen):
        k = 0
        while k < len(rows):
            tag = rows[k][-1]
            if tag == "O":
                k += 1
                continue
            end = k + 1
            while end < len(rows) and rows[end][-1] == "I-" + tag[2:]:
                end += 1
            entities.append((i, k, end, tag[2:]))
            k = end
    words = sum(e - s for _, s, e, _ in entities)
    flipped_words: set[tuple[int, int]] = set()
    types = ["PER", "LOC", "ORG", "MISC"]
    for i, start, end, kind in rng.sample(entities, len(entities)):
        if len(flipped_words) >= ARGS.share * words:
            break
        other = rng.choice([t for t in types if t != kind])
        for k in range(start, end):
            prefix = chosen[i][k][-1][:2]
            chosen[i][k][-1] = prefix + other
            flipped_words.add((i, k))
    work = OUT / f"conll-{ARGS.seed}"
    work.mkdir(parents=True, exist_ok=True)
    data = work / "train.conll"
    starts = []
    with data.open("w", encoding="utf-8") as out:
        line = 1
        for rows in chosen:
            starts.append(line)
            out.write("\n".join(" ".join(r) for r in rows) + "\n\n")
            line += len(rows) + 1
    config = work / "audit.yaml"
    config.write_text(
        f"task: ner\nmodel:\n  name: {minilm_path()}\n  max_length: 128\n"
        f"data:\n  train: {{path: {data}, format: conll}}\nner:\n  tag_column: 3\n"
        f"train:\n  epochs: {ARGS.ner_epochs}\n  batch_size: 16\n  learning_rate: 1.0e-4\n  seed: 42\n"
        f"output_dir: {work / 'run'}\n"
    )
    issues, summary, seconds = _run(config, work / "audit")
    sentence_of = {line: i for i, line in enumerate(starts)}
    ranked = [(sentence_of[r["line"]], r["word_number"] - 1) for r in issues]
    row = _row("CoNLL-2003 (entity words, other type)", ranked, flipped_words, words, summary, seconds)
    # the words in held-out order: IOB2 tags of the changed file (IOB1 read as the audit reads it)
    names, given, flat = summary["labels"], [], set()
    for i, rows in enumerate(chosen):
        previous = "O"
        for k, r in enumerate(rows):
            tag = r[-1]
            if tag != "O" and tag.startswith("I-") and (previous == "O" or previous[2:] != tag[2:]):
                tag = "B-" + tag[2:]
            given.append(names.index(tag))
            previous = r[-1]
            if (i, k) in flipped_words:
                flat.add(len(given) - 1)
    row["filters"] = filters(work / "audit", given, flat)
    return row


def main() -> None:
    global ARGS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="sst2,topics,conll")
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--sentences", type=int, default=600)
    parser.add_argument("--ner-epochs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=11, help="the sample and the changed labels")
    parser.add_argument("--share", type=float, default=0.1)
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--reuse", action="store_true", help="read an earlier run's audits instead of running them")
    ARGS = parser.parse_args()
    rows = [{"sst2": sst2, "topics": topics, "conll": conll}[name]() for name in ARGS.sets.split(",")]
    save("label_audit", {"settings": vars(ARGS), "rows": rows})
    print(table([{k: v for k, v in r.items() if k != "filters"} for r in rows], [k for k in rows[0] if k != "filters"]))
    for row in rows:
        print(f"\n{row['set']}: each cleanlab filter on the same held-out probabilities")
        print(table(row["filters"], ["filter", "flagged", "precision", "recall"]))


ARGS = argparse.Namespace()

if __name__ == "__main__":
    main()
