"""The demo's model on varied reviews it never saw (issue 34), against the old demo, same run.

  demo: `make demo` as it is: train configs/demo.yaml on examples/reviews/train.csv, then predict
        examples/reviews/predict.txt; the model is also scored on examples/reviews/test.csv.
  old:  the demo before issue 34 (its 400 uniform reviews and its recipe, read from git at
        OLD_COMMIT), trained, timed and scored the same way, on the same new test.csv.

For each run and seed: accuracy on test.csv overall and per style (the `style` column: plain,
mixed, negation, sarcasm, understatement), mean confidence (the top label's score) on right and
on wrong answers, expected calibration error (10 equal-width bins of confidence), accuracy on
predict.txt against PREDICT_GOLD, and the wall time of the demo's two commands (train, then
predict on predict.txt). Medians over the seeds are printed and saved; ratios of time are against
`old` measured in the same run, so a loaded machine slows both.

Usage: python bench/demo_quality.py [--runs demo,old] [--seeds 42,43,44] [--set key=value ...]
       (--set applies to `demo` only: to try a recipe). Writes bench/results/demo_quality.json
       (--save NAME: bench/results/NAME.json; --threads N: N torch threads per training, for
       recipe searches on a shared machine; the times of such runs are not the demo's).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import ROOT, save, table, train_bundle

REVIEWS = ROOT / "examples" / "reviews"
OLD_COMMIT = "dff7274"  # the last commit with the 400-review demo data and recipe
# predict.txt's labels, written with the file (commit b89a049) before any model was trained on the
# new reviews; a reader's check that the answers shown by `make demo` are right, never tuned on
PREDICT_GOLD = "pnpnpnpnpnpnpnpnpnpn"


def old_demo(folder: Path) -> Path:
    """The old demo's config and data, from git, in FOLDER; returns the config's path."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in ("train.csv", "test.csv", "predict.txt"):
        text = subprocess.run(
            ["git", "show", f"{OLD_COMMIT}:examples/reviews/{name}"], cwd=ROOT, check=True, capture_output=True
        ).stdout
        (folder / name).write_bytes(text)
    config = subprocess.run(
        ["git", "show", f"{OLD_COMMIT}:configs/demo.yaml"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.replace("examples/reviews/", f"{folder}/")
    path = folder / "demo.yaml"
    path.write_text(config)
    return path


def predict(model: Path, data: Path) -> tuple[list[dict], float]:
    """`bertkit predict` on DATA as a user runs it; returns the records and the command's wall time."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "bertkit", "predict", "--model", str(model), "--input", str(data), "--format", "jsonl"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()], wall


def calibration_error(confidence: list[float], right: list[bool], bins: int = 10) -> float:
    """Expected calibration error: the gap between confidence and accuracy, bin by bin, weighed by
    the bin's share of the answers."""
    total = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        inside = [i for i, c in enumerate(confidence) if low < c <= high or (b == 0 and c == 0)]
        if inside:
            gap = statistics.mean(confidence[i] for i in inside) - statistics.mean(right[i] for i in inside)
            total += abs(gap) * len(inside) / len(confidence)
    return total


def quality(records: list[dict], gold: list[dict]) -> dict:
    right = [r["label"] == g["label"] for r, g in zip(records, gold, strict=True)]
    confidence = [r["score"] for r in records]
    row = {"accuracy": statistics.mean(right)}
    for style in sorted({g["style"] for g in gold}):
        inside = [ok for ok, g in zip(right, gold, strict=True) if g["style"] == style]
        row[f"acc_{style}"] = statistics.mean(inside)
    wrong = [c for c, ok in zip(confidence, right, strict=True) if not ok]
    row["conf_right"] = statistics.mean(c for c, ok in zip(confidence, right, strict=True) if ok)
    row["conf_wrong"] = statistics.mean(wrong) if wrong else None
    row["ece"] = calibration_error(confidence, right)
    return row


def run(name: str, seed: int, sets: list[str], threads: int | None, where: str) -> dict:
    """One training and its scores; the bundle goes to outputs/bench-WHERE-NAME-SEED."""
    config, predict_txt = "configs/demo.yaml", REVIEWS / "predict.txt"
    if name == "old":
        folder = ROOT / "outputs" / "bench-demo-old-data"
        config, predict_txt, sets = str(old_demo(folder)), folder / "predict.txt", []
    info, train_wall = train_bundle(
        "classify", config, f"{where}-{name}-{seed}", [*sets, f"train.seed={seed}"], threads
    )
    model = ROOT / "outputs" / f"bench-{where}-{name}-{seed}"
    shown, predict_wall = predict(model, predict_txt)
    with open(REVIEWS / "test.csv", newline="", encoding="utf-8") as f:
        gold = list(csv.DictReader(f))
    records, _ = predict(model, REVIEWS / "test.csv")
    row = {"run": name, "seed": seed, **quality(records, gold)}
    if name == "demo":
        labels = {"p": "positive", "n": "negative"}
        row["predict_txt_right"] = sum(r["label"] == labels[g] for r, g in zip(shown, PREDICT_GOLD, strict=True))
    row.update(
        train_seconds=info["training"]["train_seconds"],
        train_wall=train_wall,
        predict_wall=round(predict_wall, 1),
        demo_wall=round(train_wall + predict_wall, 1),
    )
    return row


def medians(rows: list[dict]) -> dict:
    keys = [k for k in rows[0] if k not in ("run", "seed")]
    out = {"run": rows[0]["run"], "seeds": len(rows)}
    for k in keys:
        values = [r[k] for r in rows if r.get(k) is not None]
        out[k] = statistics.median(values) if values else None
    return out


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", default="demo,old")
    parser.add_argument("--seeds", default="42,43,44")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--threads", type=int, help="torch threads of each training (default: all cores)")
    parser.add_argument("--save", default="demo_quality", help="name of the results file in bench/results")
    args = parser.parse_args(argv)
    load = os.getloadavg()
    rows = [
        run(name, int(seed), args.sets, args.threads, args.save)
        for seed in args.seeds.split(",")
        for name in args.runs.split(",")
    ]
    summary = [medians([r for r in rows if r["run"] == name]) for name in args.runs.split(",")]
    if len(summary) > 1 and summary[-1]["run"] == "old":
        for row in summary:
            row["demo_wall_vs_old"] = round(row["demo_wall"] / summary[-1]["demo_wall"], 2)
    columns = [k for k in summary[0] if k != "seeds"]
    print(table(summary, columns))
    result = {
        "sets": args.sets,
        "load_average_at_start": [round(x, 1) for x in load],
        "load_average_at_end": [round(x, 1) for x in os.getloadavg()],
        "cores": os.cpu_count(),
        "medians": summary,
        "runs": rows,
    }
    print(f"written to {save(args.save, result)}")


if __name__ == "__main__":
    main(sys.argv[1:])
