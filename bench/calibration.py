"""Whether a classifier's scores are probabilities: ECE and Brier score on a held-out test split,
before calibration (the softmax of the fine-tuned model) and after (the temperature bertkit fits on
the validation split at the end of training, `classify.calibration: temperature`, the default).

  sst2   --examples SST-2 training sentences (default 2,000, seeded; a sample no test reads), the
         packaged MiniLM fine-tuned --epochs times (default 2, at 1e-4, head 1e-3, max length
         64: the demo's recipe). The test split is SST-2's dev set (872 whole sentences). Two
         setups, each trained per seed:
           held-out: the validation split (where the best checkpoint is picked and the
                 temperature fitted) is 1,000 other SST-2 training sentences of 12 words or more,
                 whole sentences like the test's;
           train-split: bertkit's automatic validation split, 10 % of the training sample, which
                 in SST-2 is mostly phrases cut from sentences: a shift from the test's kind of
                 text, as when the texts a model meets differ from the labelled ones.

Per seed: the test split's accuracy, ECE and Brier score of the calibrated scores, the same
before calibration (`*_uncalibrated`, from the same predictions: the calibrated model's
predicted labels are the same ones), and the temperature. The medians over --seeds lead.

Usage: python bench/calibration.py [--examples 2000] [--epochs 2] [--seeds 1,2,3]
       [--setups held-out,train-split]
Writes bench/results/calibration.json and prints a table.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys

from common import DATA, ROOT, minilm_path, require, save, table, train_bundle

OUT = ROOT / "outputs" / "bench-calibration"
SEED = 23


def _write(path, rows) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["text", "label"])
        writer.writerows(rows)


def data(examples: int) -> dict:
    rows = list(csv.reader(require(DATA / "en/sst2/train.tsv").open(encoding="utf-8"), delimiter="\t"))[1:]
    rng = random.Random(SEED)
    rng.shuffle(rows)
    train = rows[:examples]
    chosen = {text for text, _ in train}
    whole = [r for r in rows[examples:] if len(r[0].split()) >= 12 and r[0] not in chosen][:1000]
    OUT.mkdir(parents=True, exist_ok=True)
    files = {"train": OUT / "train.csv", "validation": OUT / "validation.csv"}
    _write(files["train"], train)
    _write(files["validation"], whole)
    files["test"] = require(DATA / "en/sst2/dev.tsv")
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=2000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--setups", default="held-out,train-split")
    args = parser.parse_args()
    files = data(args.examples)
    config = OUT / "calibration.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 64\n"
        f"data:\n  train: {files['train']}\n  test: {files['test']}\n"
        f"train:\n  epochs: {args.epochs}\n  batch_size: 16\n  learning_rate: 1.0e-4\n  head_learning_rate: 1.0e-3\n"
        "  warmup_ratio: 0.1\nclassify:\n  strategy: finetune\n"
        f"output_dir: {OUT / 'run'}\n"
    )
    rows = []
    setups = args.setups.split(",")
    for setup in setups:
        for seed in [int(s) for s in args.seeds.split(",")]:
            sets = [f"train.seed={seed}"] + ([f"data.validation={files['validation']}"] if setup == "held-out" else [])
            info, wall = train_bundle("classify", str(config), f"calibration-{setup}-{seed}", sets)
            rows.append(_row(setup, seed, info, wall))
            print(json.dumps(rows[-1]), flush=True)
    keys = ["accuracy", "ece_before", "ece_after", "brier_before", "brier_after", "temperature"]
    medians = []
    for setup in setups:
        mine = [r for r in rows if r["setup"] == setup]
        middle = {k: round(statistics.median(r[k] for r in mine), 4) for k in keys}
        medians.append({"setup": setup, "seed": "median", **middle})
    columns = ["setup", "seed", *keys, "validation_examples", "minutes"]
    print(table([*rows, *medians], columns))
    result = {"command": " ".join(["python", "bench/calibration.py", *sys.argv[1:]]), "examples": args.examples,
              "epochs": args.epochs, "runs": rows, "medians": medians}  # fmt: skip
    print(f"written {save('calibration', result)}")


def _row(setup: str, seed: int, info: dict, wall: float) -> dict:
    test_scores = info["metrics"]["test"]
    return {
        "setup": setup,
        "seed": seed,
        "accuracy": round(test_scores["accuracy"], 4),
        "ece_before": round(test_scores["ece_uncalibrated"], 4),
        "ece_after": round(test_scores["ece"], 4),
        "brier_before": round(test_scores["brier_uncalibrated"], 4),
        "brier_after": round(test_scores["brier"], 4),
        "temperature": info["calibration"]["temperatures"][0],
        "method": info["calibration"]["method"],
        "validation_examples": info["calibration"]["examples"],
        "minutes": round(wall / 60, 1),
    }


if __name__ == "__main__":
    main()
