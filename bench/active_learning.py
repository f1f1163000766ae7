"""Does `bertkit select` pick better than chance? A simulated labelling loop on real data: start
from --start labelled examples a class, then --rounds rounds of: train, `select` --picks texts from
the unlabelled pool, reveal their true labels (the simulated labeller), append them. The model
after the last round is scored on a held-out test set; each strategy runs the same loop from the
same start, for each seed, and is compared with `random` picks.

  sst2   the pool: --pool SST-2 training sentences of --min-words words or more (default 800 of at
         least 10, seeded per seed; a sample no test reads), the start drawn from them; the test:
         SST-2's dev set (872 whole sentences). The length floor keeps the pool to whole
         sentences, the kind of text a user has to label: SST-2's training set is mostly phrases
         cut from its sentences ("the greatest"), and the most uncertain of those are fragments
         no labeller would be asked about.
         The packaged MiniLM on classify's few-shot route (`strategy: auto` takes the
         contrastive route at these sizes: at most 8 + 3 × 32 / 2 = 56 examples a class), with
         --pair-rounds rounds of pairs (default 2; the default 20 would take this 2-core CPU
         hours for the whole study: the route is the same, its encoder tuned on fewer pairs).

Everything runs in this process through bertkit's library (`training.train`, `selection.select`),
as the commands would run it.

Usage: python bench/active_learning.py [--strategies random,margin,margin-clusters]
       [--seeds 1,2,3] [--pool 800] [--min-words 10] [--start 8] [--rounds 3] [--picks 32] [--pair-rounds 2]
Writes bench/results/active_learning.json and prints a table: accuracy after the last round per
strategy and seed, the medians, and each strategy's median gain over random in points.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import time

from common import DATA, ROOT, minilm_path, require, save, table

OUT = ROOT / "outputs" / "bench-active-learning"


def _write(path, rows: list[tuple[str, str]], labelled: bool = True) -> None:
    with path.open("w", newline="", encoding="utf-8") as out:
        writer = csv.writer(out)
        writer.writerow(["text", "label"] if labelled else ["text"])
        writer.writerows(rows if labelled else [(t,) for t, _ in rows])


def _train(config, train_file, output, pair_rounds: int, seed: int, test=None) -> dict:
    from bertkit import training
    from bertkit.config import load_config

    sets = [f"data.train={train_file}", f"output_dir={output}", f"train.seed={seed}",
            f"classify.pair_rounds={pair_rounds}"] + ([f"data.test={test}"] if test else [])  # fmt: skip
    cfg = load_config(config, sets, task="classify")
    _, scores = training.train(cfg, overwrite=True)
    return scores


def loop(strategy: str, seed: int, pool_rows, test, args) -> dict:
    from bertkit.selection import SelectOptions, select

    rng = random.Random(seed)
    truth = dict(pool_rows)
    by_class: dict[str, list] = {}
    for text, label in pool_rows:
        by_class.setdefault(label, []).append(text)
    labelled = [(t, label) for label in sorted(by_class) for t in rng.sample(by_class[label], args.start)]
    work = OUT / f"{strategy}-{seed}"
    work.mkdir(parents=True, exist_ok=True)
    pool = work / "pool.csv"
    _write(pool, pool_rows, labelled=False)
    config = work / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 64\n"
        f"data:\n  train: {work / 'train.csv'}\n"
        "train:\n  batch_size: 16\nclassify:\n  strategy: auto\n"
        f"output_dir: {work / 'model'}\n"
    )
    accuracies = []
    started = time.perf_counter()
    for round_number in range(args.rounds + 1):
        _write(work / "train.csv", labelled)
        last = round_number == args.rounds
        scores = _train(config, work / "train.csv", work / "model", args.pair_rounds, seed, test if last else None)
        if last:  # the test set is read once, by the last model (the earlier rounds' models only pick)
            accuracies.append(round(scores["test"]["accuracy"], 4))
            break
        picks = work / f"picks-{round_number + 1}.csv"
        options = SelectOptions(args.picks, strategy, seed=seed, overwrite=True)
        select(str(work / "model"), str(pool), str(picks), options)
        picked = [row["text"] for row in csv.DictReader(picks.open(encoding="utf-8"))]
        labelled += [(t, truth[t]) for t in picked]  # the simulated labeller
    return {"strategy": strategy, "seed": seed, "accuracy": accuracies[-1],
            "labelled": len(labelled), "minutes": round((time.perf_counter() - started) / 60, 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--strategies", default="random,margin,margin-clusters")
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--pool", type=int, default=800)
    parser.add_argument("--min-words", type=int, default=10)
    parser.add_argument("--start", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--picks", type=int, default=32)
    parser.add_argument("--pair-rounds", type=int, default=2)
    args = parser.parse_args()
    rows = list(csv.reader(require(DATA / "en/sst2/train.tsv").open(encoding="utf-8"), delimiter="\t"))[1:]
    rows = [r for r in rows if len(r[0].split()) >= args.min_words]
    test = require(DATA / "en/sst2/dev.tsv")
    strategies = args.strategies.split(",")
    results = []
    for seed in [int(s) for s in args.seeds.split(",")]:
        pool_rows = [(t, label) for t, label in random.Random(100 + seed).sample(rows, args.pool)]
        pool_rows = list(dict(pool_rows).items())  # one label a text
        for strategy in strategies:
            results.append(loop(strategy, seed, pool_rows, test, args))
            print(json.dumps(results[-1]), flush=True)
    medians = []
    random_of = {r["seed"]: r["accuracy"] for r in results if r["strategy"] == "random"}
    for strategy in strategies:
        mine = [r for r in results if r["strategy"] == strategy]
        middle = statistics.median(r["accuracy"] for r in mine)
        gains = [r["accuracy"] - random_of[r["seed"]] for r in mine if r["seed"] in random_of]
        medians.append({"strategy": strategy, "seed": "median", "accuracy": round(middle, 4),
                        "gain_over_random": round(100 * statistics.median(gains), 2) if gains else None})  # fmt: skip
    print(table([*results, *medians], ["strategy", "seed", "accuracy", "gain_over_random", "labelled", "minutes"]))
    record = {"command": " ".join(["python", "bench/active_learning.py", *sys.argv[1:]]), "settings": vars(args),
              "runs": results, "medians": medians}  # fmt: skip
    print(f"written {save('active_learning', record)}")


if __name__ == "__main__":
    main()
