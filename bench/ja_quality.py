"""A small Japanese BERT built here, and what its pre-training buys on five Japanese tasks
(bench, not CI).

  corpus:    the training splits of ../shared/data/ja (livedoor bodies, JSQuAD contexts, Wikipedia
             NER sentences) gathered into outputs/ja/corpus.txt, one paragraph a line (no dev
             text: the fine-tuning scores below are on dev)
  pretrain:  configs/ja/local/pretrain.yaml: a MeCab + WordPiece vocabulary learnt from that text,
             then masked-LM pre-training of a 4-layer, 256-wide BERT from scratch (800 steps)
  pretrain-more: configs/ja/local/pretrain_more.yaml: 600 more steps of the same
  finetune:  each of configs/ja/local/{livedoor,jnli,jsts,ner,jsquad}.yaml twice, from the
             pre-trained model and from the same architecture and tokenizer with random weights
             (model.random_init: true); scores on dev

Usage: python bench/ja_quality.py [corpus] [pretrain] [pretrain-more] [finetune] [TASK ...]
                                  [--only=pre-trained | --only='random init']
Writes bench/results/ja_quality.json and prints a table.
"""

from __future__ import annotations

import gzip
import json
import sys

from common import DATA, RESULTS, ROOT, require, save, table, train_bundle

JA = DATA / "ja"
CORPUS = ROOT / "outputs" / "ja" / "corpus.txt"
TASKS = {
    "livedoor": ("classify", "accuracy"),
    "jnli": ("classify", "accuracy"),
    "jsts": ("classify", "spearman"),
    "ner": ("ner", "f1"),
    "jsquad": ("qa", "f1"),
}


def corpus() -> dict:
    lines = []
    with gzip.open(require(JA / "livedoor/train.jsonl.gz"), "rt", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            lines += [p.strip() for p in row["body"].splitlines() if p.strip()]
    squad = json.loads(require(JA / "jsquad/train.json").read_text(encoding="utf-8"))
    lines += sorted({p["context"].split(" [SEP] ", 1)[-1] for a in squad["data"] for p in a["paragraphs"]})
    lines += [r["text"] for r in json.loads(require(JA / "ner_wikipedia/train.json").read_text(encoding="utf-8"))]
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"lines": len(lines), "characters": sum(map(len, lines))}


STAGES = {  # config, bundle name, the link that configs/ja/local/*.yaml read
    "pretrain": ("configs/ja/local/pretrain.yaml", "ja-pretrain", "bert-small"),
    "pretrain-more": ("configs/ja/local/pretrain_more.yaml", "ja-pretrain-more", "bert-small-2"),
}


def pretrain(stage: str) -> dict:
    if not CORPUS.exists():
        corpus()
    config, name, link_name = STAGES[stage]
    info, wall = train_bundle("mlm-adapt", config, name, [])
    link = ROOT / "outputs" / "ja" / link_name
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(ROOT / "outputs" / f"bench-{name}")
    scores = info["metrics"]["validation"]
    return {
        "perplexity_before": scores.get("perplexity_before"),
        "perplexity_after": scores.get("perplexity_after"),
        "train_seconds": info["training"]["train_seconds"],
        "wall_seconds": wall,
    }


STARTS = {"pre-trained": [], "random init": ["model.random_init=true"]}


def finetune(name: str, starts: list[str]) -> list[dict]:
    task = TASKS[name][0]
    rows = []
    for start in starts:
        info, wall = train_bundle(task, f"configs/ja/local/{name}.yaml", f"ja-{name}-{start[:6]}", STARTS[start])
        rows.append({**summary(name, start, info), "wall_seconds": wall})
    return rows


def summary(name: str, start: str, info: dict) -> dict:
    """One result row from a fine-tuned bundle's bertkit.json."""
    metric = TASKS[name][1]
    scores = info["metrics"]["validation"]
    row = {"task": name, "start": start, metric: scores[metric], "train_seconds": info["training"]["train_seconds"]}
    for extra in ("exact_match", "accuracy", "pearson"):
        if extra in scores and extra != metric:
            row[extra] = scores[extra]
    return row


def main(argv: list[str]) -> None:
    result = {}
    if "corpus" in argv:
        result["corpus"] = corpus()
        print(result["corpus"])
    for stage in STAGES:
        if stage in argv:
            result[stage] = pretrain(stage)
            print(result[stage])
    chosen = [a for a in argv if a in TASKS] or (list(TASKS) if "finetune" in argv else [])
    starts = [s for s in STARTS if f"--only={s}" in argv] or list(STARTS)
    rows = [row for name in chosen for row in finetune(name, starts)]
    if rows:
        result["finetune"] = rows
        print(table(rows, ["task", "start", *sorted({k for r in rows for k in r} - {"task", "start"})]))
    earlier = RESULTS / "ja_quality.json"  # stages run separately add to one record
    merged = json.loads(earlier.read_text()) if earlier.exists() else {}
    if "finetune" in result:
        done = {(r["task"], r["start"]) for r in result["finetune"]}
        result["finetune"] += [r for r in merged.get("finetune", []) if (r["task"], r["start"]) not in done]
    print(f"written to {save('ja_quality', {**merged, **result})}")


if __name__ == "__main__":
    main(sys.argv[1:])
