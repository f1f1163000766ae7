"""Few-shot classification (bench, not CI): `classify.strategy: contrastive` against plain
fine-tuning (`finetune`, bertkit's defaults) and against the `setfit` library, on the same samples
and the same encoder (the packaged all-MiniLM-L6-v2).

  sets:    sst2 (dev as test), imdb (test), livedoor (dev as test; 9 topics, Japanese: MiniLM's
           vocabulary is English, so this is MiniLM reading Japanese mostly as single characters)
  samples: K examples per class drawn from train with seed S (K in 8 16 64, S in 0 1 2); the test
           is a fixed sample of 500 texts per set (seed 0); texts cut at max_length 128
  recipe:  contrastive and setfit alike: 20 rounds of pairs, one pass, batch 16, body learning rate
           2e-5, then logistic regression (bertkit's on the head's own input vector, setfit's on
           its mean-pooled normalised embedding)

setfit runs in a side environment (bench/setfit_runner.py under SETFIT_PYTHON, default
/work/side-setfit/bin/python): `python3 -m venv /work/side-setfit; pip install torch==2.13.0;
pip install setfit==1.2.0`. Without it the setfit column is left out.

Usage: python bench/fewshot_quality.py [--sets sst2,imdb,livedoor] [--shots 8] [--seeds 0,1,2]
       [--methods finetune,contrastive,setfit,contrastive:contrastive_learning_rate=1e-4]
Each finished cell is added to bench/results/fewshot_quality_SET.json at once (a run cut short
keeps what it finished; a cell already there is not run again); at the end (or with --summary)
the cells of every set are gathered in bench/results/fewshot_quality.json with the medians, the
gain on fine-tuning, and contrastive against setfit seed by seed (`vs_setfit`: the mean difference
on the same samples; `won`: the seeds where contrastive scored as high or higher).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import DATA, RESULTS, ROOT, minilm_path, require, table

TEST_SIZE = 500
# tokens kept of a text; livedoor's 64 (MiniLM reads Japanese mostly a character a token: the
# headline and the article's first lines) keeps its 72-example runs within the CPU time there was
MAX_LENGTH = {"sst2": 128, "imdb": 128, "livedoor": 64}
WORK = ROOT / "outputs" / "bench-fewshot"
RESULT = RESULTS / "fewshot_quality.json"


def cells_file(name: str) -> Path:
    """Each set's cells in a file of its own, so that sets can run side by side."""
    return RESULTS / f"fewshot_quality_{name}.json"


def _rows(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _tsv(path: Path) -> list[dict]:
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    return [{"text": t.strip(), "label": str(y)} for t, y in (line.rsplit("\t", 1) for line in lines)]


def _livedoor(path: Path) -> list[dict]:
    return [{"text": f"{r['title']}\n{r['body'][:600]}", "label": r["category"]} for r in _rows(path)]


def _imdb(path: Path) -> list[dict]:
    return [{"text": r["text"][:2000], "label": "pos" if int(r["label"]) else "neg"} for r in _rows(path)]


SETS = {
    "sst2": (lambda: _tsv(require(DATA / "en/sst2/train.tsv")), lambda: _tsv(require(DATA / "en/sst2/dev.tsv"))),
    "imdb": (
        lambda: _imdb(require(DATA / "en/imdb/train.jsonl.gz")),
        lambda: _imdb(require(DATA / "en/imdb/test.jsonl.gz")),
    ),
    "livedoor": (
        lambda: _livedoor(require(DATA / "ja/livedoor/train.jsonl.gz")),
        lambda: _livedoor(require(DATA / "ja/livedoor/dev.jsonl.gz")),
    ),
}


def write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def sample(rows: list[dict], per_class: int, seed: int) -> list[dict]:
    """`per_class` examples of every label, drawn with `seed`, shuffled."""
    rng = random.Random(seed)
    by_label: dict[str, list[dict]] = {}
    for r in rows:
        by_label.setdefault(r["label"], []).append(r)
    picked = [r for label in sorted(by_label) for r in rng.sample(by_label[label], per_class)]
    rng.shuffle(picked)
    return picked


def bertkit_cell(method: str, train: Path, test: Path, seed: int, max_length: int) -> dict:
    """`bertkit train classify` with strategy `method` (a method `contrastive:KEY=VALUE` also sets
    classify.KEY: a variant measured beside the defaults); the test accuracy from its bertkit.json."""
    out = WORK / f"bundle-{train.parent.name}-{train.stem}-{method}"  # a cell's own: cells run side by side
    method, _, variant = method.partition(":")
    sets = {
        "task": "classify",
        "model": {"name": minilm_path(), "max_length": max_length},
        # the training sample scored as validation: no example is held out of a few-shot sample, and
        # with evaluation off nothing is selected on it
        "data": {"train": str(train), "validation": str(train), "test": str(test)},
        "train": {"seed": seed, "batch_size": 16, "eval_strategy": "no"},
        "classify": {"strategy": method, **_setting(variant)},
        "output_dir": str(out),
    }
    config = out.with_suffix(".yaml")
    config.write_text(json.dumps(sets))  # JSON is YAML
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bertkit", "train", "classify", "-c", str(config), "--overwrite"],
        cwd=ROOT,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    info = json.loads((out / "bertkit.json").read_text())
    return {
        "accuracy": info["metrics"]["test"]["accuracy"],
        "strategy": info["strategy"],
        "train_seconds": info["training"]["train_seconds"],
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def _setting(variant: str) -> dict:
    """KEY=VALUE as {KEY: VALUE}, the value read as JSON where it is (numbers), else as text."""
    if not variant:
        return {}
    key, value = variant.split("=", 1)
    try:
        return {key: json.loads(value)}
    except json.JSONDecodeError:
        return {key: value}


def setfit_cell(train: Path, test: Path, seed: int, max_length: int) -> dict | None:
    python = os.environ.get("SETFIT_PYTHON", "/work/side-setfit/bin/python")
    if not Path(python).exists():
        return None
    runner = ROOT / "bench" / "setfit_runner.py"
    args = [python, str(runner), minilm_path(), str(train), str(test), str(seed), str(max_length)]
    started = time.perf_counter()
    done = subprocess.run(args, cwd=ROOT, check=True, capture_output=True, text=True)
    row = json.loads(done.stdout.strip().splitlines()[-1])
    return {**row, "wall_seconds": round(time.perf_counter() - started, 1)}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sets", default="sst2,imdb,livedoor")
    parser.add_argument("--shots", default="8,16,64")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--methods", default="finetune,contrastive,setfit")
    parser.add_argument("--summary", action="store_true", help="only gather the sets' cells and print the table")
    args = parser.parse_args(argv)
    if not args.summary:
        for name in args.sets.split(","):
            run_set(name, args)
    cells = [c for name in SETS if cells_file(name).exists() for c in json.loads(cells_file(name).read_text())["cells"]]
    summary = summarise(cells)
    RESULT.write_text(json.dumps({"medians": summary, "cells": cells}, indent=2) + "\n")
    columns = ["set", "per_class", "finetune", "contrastive", "setfit", "gain", "vs_setfit", "won", "seeds"]
    print(table(summary, columns))


def run_set(name: str, args) -> None:
    path = cells_file(name)
    results = json.loads(path.read_text()) if path.exists() else {"cells": []}
    done = {(c["per_class"], c["seed"], c["method"]) for c in results["cells"]}
    load_train, load_test = SETS[name]
    train_rows = load_train()
    test = write(WORK / name / "test.jsonl", random.Random(0).sample(load_test(), TEST_SIZE))
    length = MAX_LENGTH[name]
    for k in map(int, args.shots.split(",")):
        for seed in map(int, args.seeds.split(",")):
            train = write(WORK / name / f"train-{k}-{seed}.jsonl", sample(train_rows, k, seed))
            for method in args.methods.split(","):
                if (k, seed, method) in done:
                    continue
                if method == "setfit":
                    row = setfit_cell(train, test, seed, length)
                else:
                    row = bertkit_cell(method, train, test, seed, length)
                if row is None:
                    continue
                cell = {"set": name, "per_class": k, "seed": seed, "method": method, "max_length": length, **row}
                print(json.dumps(cell), flush=True)
                add_cell(path, cell)


def add_cell(path: Path, cell: dict) -> None:
    """Adds `cell` to the cells `path` holds now: read again at each cell, so that runs on one set
    (setfit beside bertkit's methods) keep each other's cells."""
    results = json.loads(path.read_text()) if path.exists() else {"cells": []}
    results["cells"].append(cell)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")


def summarise(cells: list[dict]) -> list[dict]:
    """The median accuracy of each method per set and size, and contrastive's gain on finetune."""
    keys = sorted({(c["set"], c["per_class"]) for c in cells}, key=lambda k: (list(SETS).index(k[0]), k[1]))
    rows = []
    for name, k in keys:
        row = {"set": name, "per_class": k}
        variants = sorted({c["method"] for c in cells if ":" in c["method"]})
        for method in ("finetune", "contrastive", "setfit", *variants):
            scores = [c["accuracy"] for c in cells if (c["set"], c["per_class"], c["method"]) == (name, k, method)]
            row[method] = round(statistics.median(scores), 4) if scores else None
            row[f"{method}_seeds"] = [round(s, 4) for s in scores]
        if row["finetune"] is not None and row["contrastive"] is not None:
            row["gain"] = round(row["contrastive"] - row["finetune"], 4)
        # against setfit seed by seed (the same samples): the mean difference, and the seeds won or tied
        paired = _paired(cells, name, k, "contrastive", "setfit")
        if paired:
            row["vs_setfit"] = round(statistics.mean(paired), 4)
            row["won"] = f"{sum(d >= 0 for d in paired)}/{len(paired)}"
        row["seeds"] = len(row["contrastive_seeds"])
        rows.append(row)
    return rows


def _paired(cells: list[dict], name: str, k: int, first: str, second: str) -> list[float]:
    """`first`'s accuracy minus `second`'s on each seed both ran."""
    by = {(c["method"], c["seed"]): c["accuracy"] for c in cells if (c["set"], c["per_class"]) == (name, k)}
    return [by[first, s] - by[second, s] for m, s in by if m == first and (second, s) in by]


if __name__ == "__main__":
    main(sys.argv[1:])
