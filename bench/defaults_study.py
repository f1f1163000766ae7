"""Do a task's defaults hold on data and budgets they were not found on? (bench, not CI)

Each run is `bertkit train TASK` on a sample no default was tuned on, at a given size, length and
seed, with one named setting: `defaults` (the config leaves the learning-rate keys out, so the
task's defaults apply), `fixed:LR` (the defaults but one learning rate, whatever the run's length)
or `peer:LR`, a peer script's recipe at one learning rate. A row per run is appended
to bench/results/defaults_study.jsonl, so a long study can be stopped and resumed (rows already
there are skipped).

  qa:       SQuAD v1.1 questions from articles 6-33 of train-v1.1.json (the QA defaults were
            found on the first 2,000 questions, articles 0-5), a seeded sample of --size questions,
            1 epoch, batch 16, stride 128 (64 at length 256), scored on dev-v1.1.json (1,058).
            Peer: run_qa.py's recipe (one learning rate, no warmup, no weight decay, windows in
            random order).
  classify: SST-2 sentences after the first 10,000 rows of train.tsv (shuffled, seed 0; the
            classify default was chosen on IMDb and full SST-2), a seeded sample of --size,
            1 epoch, batch 16, scored on the official dev set (872). Peer: run_glue.py's recipe
            (one learning rate, no warmup, no weight decay).
  ner:      CoNLL-2003, a seeded sample of --size sentences of eng.train (the NER default was
            chosen on all 14,041 for 3 epochs), max length 128, 1 epoch, batch 16, scored on a
            seeded 1,000 of eng.testa's sentences (entity F1). Peer: run_ner.py's recipe.

Usage: python bench/defaults_study.py TASK --size N [N ...] --length L [L ...] --seed S [S ...]
           --setting defaults peer:2e-4 ... [--table]
`--table` prints what the results file holds for TASK (median over seeds) and runs nothing.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys

from common import DATA, RESULTS, ROOT, minilm_path, require, table, train_bundle

WORK = ROOT / "outputs" / "bench-defaults"
LOG = RESULTS / "defaults_study.jsonl"
PEER = ["train.head_learning_rate=null", "train.warmup_ratio=0", "train.weight_decay=0", "train.group_by_length=false"]


def qa_files() -> dict:
    source = json.loads(require(DATA / "en/squad/train-v1.1.json").read_text(encoding="utf-8"))
    WORK.mkdir(parents=True, exist_ok=True)
    train = WORK / "squad-articles-6-33.json"
    if not train.exists():
        train.write_text(json.dumps({"version": source["version"], "data": source["data"][6:]}), encoding="utf-8")
    return {"train": train, "validation": require(DATA / "en/squad/dev-v1.1.json")}


def classify_files() -> dict:
    source = require(DATA / "en/sst2/train.tsv")
    header, *rows = source.read_text(encoding="utf-8").splitlines()
    random.Random(0).shuffle(rows)
    WORK.mkdir(parents=True, exist_ok=True)
    train = WORK / "sst2-after-10000.tsv"
    if not train.exists():
        train.write_text("\n".join([header, *rows[10_000:]]) + "\n", encoding="utf-8")
    return {"train": train, "validation": require(DATA / "en/sst2/dev.tsv")}


def ner_files() -> dict:
    files = {"train": "eng.train", "validation": "eng.testa"}
    return {role: f"{{path: {require(DATA / 'en/conll2003' / name)}, format: conll}}" for role, name in files.items()}


TASKS = {"qa": (qa_files, "f1"), "classify": (classify_files, "accuracy"), "ner": (ner_files, "f1")}
SECTIONS = {
    "qa": lambda length: f"qa:\n  doc_stride: {64 if length <= 256 else 128}\n",
    "ner": lambda length: "ner:\n  token_column: 0\n  tag_column: 3\n",
}


def config(task: str, length: int) -> str:
    files = TASKS[task][0]()
    extra = SECTIONS[task](length) if task in SECTIONS else ""
    path = WORK / f"{task}-{length}.yaml"
    path.write_text(
        f"task: {task}\nmodel:\n  name: {minilm_path()}\n  max_length: {length}\n"
        f"data:\n  train: {files['train']}\n  validation: {files['validation']}\n{extra}"
        "train:\n  epochs: 1\n  batch_size: 16\n  eval_strategy: 'no'\n  logging_steps: 1000\n"
        f"output_dir: {WORK / 'unused'}\n"
    )
    return str(path)


def setting_sets(setting: str) -> list[str]:
    if setting == "defaults":
        return []
    kind, _, lr = setting.partition(":")
    if kind == "peer":
        return [f"train.learning_rate={lr}", *PEER]
    if kind == "fixed":  # bertkit's defaults, with one learning rate for every run length
        return [f"train.learning_rate={lr}"]
    if kind == "sets":  # sets:key=value,key=value (a candidate default)
        return lr.split(",")
    raise SystemExit(f"unknown setting {setting!r}: defaults, peer:LR, fixed:LR or sets:key=value,...")


def done_rows() -> list[dict]:
    if not LOG.exists():
        return []
    return [json.loads(line) for line in LOG.read_text(encoding="utf-8").splitlines() if line.strip()]


def run(task: str, size: int, length: int, seed: int, setting: str) -> dict:
    sets = [f"data.max_train_samples={size}", "data.sample=random", f"train.seed={seed}", *setting_sets(setting)]
    if task == "ner":  # a seeded 1,000 of eng.testa's 3,250 sentences: the scoring costs less than the training
        sets.append("data.max_eval_samples=1000")
    name = f"defaults-{task}-{size}-{length}-{seed}-{setting.replace(':', '-').replace(',', '_')}"[:120]
    info, wall = train_bundle(task, config(task, length), name, sets)
    metric = TASKS[task][1]
    return {
        "task": task,
        "size": size,
        "length": length,
        "seed": seed,
        "setting": setting,
        "steps": info["training"].get("train_steps"),
        metric: info["metrics"]["validation"][metric],
        "train_seconds": info["training"].get("train_seconds"),
        "wall_seconds": wall,
    }


def summary(task: str) -> str:
    metric = TASKS[task][1]
    groups: dict[tuple, list[float]] = {}
    for row in done_rows():
        if row["task"] == task:
            groups.setdefault((row["size"], row["length"], row["setting"]), []).append(row[metric])
    rows = [
        {"size": s, "length": n, "setting": k, f"median {metric}": round(statistics.median(v), 4), "seeds": len(v),
         "values": " ".join(f"{x:.3f}" for x in v)}
        for (s, n, k), v in sorted(groups.items())
    ]
    return table(rows, ["size", "length", "setting", f"median {metric}", "seeds", "values"])


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("task", choices=sorted(TASKS))
    parser.add_argument("--size", type=int, nargs="+", default=[1000])
    parser.add_argument("--length", type=int, nargs="+", default=[256])
    parser.add_argument("--seed", type=int, nargs="+", default=[42])
    parser.add_argument("--setting", nargs="+", default=["defaults"])
    parser.add_argument("--table", action="store_true")
    args = parser.parse_args(argv)
    if not args.table:
        seen = {(r["task"], r["size"], r["length"], r["seed"], r["setting"]) for r in done_rows()}
        for seed in args.seed:
            for size in args.size:
                for length in args.length:
                    for setting in args.setting:
                        if (args.task, size, length, seed, setting) in seen:
                            continue
                        row = run(args.task, size, length, seed, setting)
                        LOG.parent.mkdir(parents=True, exist_ok=True)
                        with LOG.open("a", encoding="utf-8") as out:
                            out.write(json.dumps(row) + "\n")
                        print(json.dumps(row), flush=True)
    print(summary(args.task))


if __name__ == "__main__":
    main(sys.argv[1:])
