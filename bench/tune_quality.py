"""`bertkit tune` against bertkit's own defaults at the same budget (bench, not CI).

  sst2:  --train N sentences sampled (seed 0) from SST-2 train, --validation V other train
         sentences that the study optimises (validation f1_macro), and the official dev set (872)
         as the test that both models are scored on once at the end. MiniLM, max length 64,
         --epochs E as the run's own epochs, evaluation every 10 steps (what the pruner reads).
         `default`: `bertkit train` with that config as it is (classify's defaults: learning
         rate auto, 5e-5 raised for short runs, batch 16, 6% warmup, weight decay 0.01).
         `tuned`: `bertkit tune --trials T` with the task's default space around the same
         values, its best.yaml then trained by `bertkit train` and scored on the test.
  squad: the budget of bench/qa_quality.py `defaults` (the first 2,000 questions of
         train-v1.1.json, length 384, 1 epoch) with --trials trials; the study optimises F1 on
         whole articles from the end of train-v1.1.json (at least --validation questions, none
         trained on), and both models are scored once on dev-v1.1.json (1,058 questions) as the
         test. An evaluation every 40 steps for the pruner. Long on a CPU (minutes a trial):
         --timeout stops starting trials, --resume continues a stopped bench's study.

Usage: python bench/tune_quality.py [sst2] [squad] [--train N] [--validation V] [--epochs E] [--trials T]
       [--timeout 2h] [--resume]
Writes bench/results/tune_quality.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time

from common import DATA, ROOT, minilm_path, require, save, table

WORK = ROOT / "outputs" / "bench-tune"


def sst2_files(train: int, validation: int) -> dict:
    """Disjoint samples of SST-2 train (a study must not be scored on what it trained on)."""
    source = require(DATA / "en/sst2/train.tsv")
    header, *rows = source.read_text(encoding="utf-8").splitlines()
    random.Random(0).shuffle(rows)
    folder = WORK / "data"
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, part in (("train", rows[:train]), ("validation", rows[train : train + validation])):
        files[name] = folder / f"sst2-{name}-{len(part)}.tsv"
        files[name].write_text("\n".join([header, *part]) + "\n", encoding="utf-8")
    files["test"] = require(DATA / "en/sst2/dev.tsv")
    return files


def sst2_config(args) -> str:
    files = sst2_files(args.train, args.validation)
    path = WORK / "sst2.yaml"
    path.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 64\n"
        f"data:\n  train: {files['train']}\n  validation: {files['validation']}\n  test: {files['test']}\n"
        f"train:\n  epochs: {args.epochs}\n  eval_strategy: steps\n  eval_steps: 10\n  logging_steps: 50\n"
        "  seed: 42\n"
        f"output_dir: {WORK / 'sst2-study'}\n"
    )
    return str(path)


def squad_config(args) -> str:
    """configs/local/squad.yaml on the first 2,000 questions of train-v1.1.json (SQUAD_SETS), with
    whole articles from the end of the same file (at least --validation questions, none of them
    among the 2,000) as the validation set the study optimises, and dev-v1.1.json as the test."""
    source = json.loads(require(DATA / "en/squad/train-v1.1.json").read_text(encoding="utf-8"))
    held, count = [], 0
    for article in reversed(source["data"]):
        if count >= args.validation:
            break
        held.insert(0, article)
        count += sum(len(p["qas"]) for p in article["paragraphs"])
    (WORK / "data").mkdir(parents=True, exist_ok=True)
    validation = WORK / "data" / f"squad-validation-{count}.json"
    validation.write_text(json.dumps({"version": source["version"], "data": held}), encoding="utf-8")
    import yaml

    cfg = yaml.safe_load((ROOT / "configs/local/squad.yaml").read_text(encoding="utf-8"))
    cfg["data"].update(train=str(DATA / "en/squad/train-v1.1.json"), validation=str(validation),
                       test=str(require(DATA / "en/squad/dev-v1.1.json")))  # fmt: skip
    cfg["output_dir"] = str(WORK / "squad-study")
    path = WORK / "squad.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)


SQUAD_SETS = ["data.max_train_samples=2000", "data.sample=first", "train.epochs=1", "train.eval_strategy=steps",
              "train.eval_steps=40"]  # fmt: skip
RUNS = {"sst2": ("classify", sst2_config, [], "f1_macro"), "squad": ("qa", squad_config, SQUAD_SETS, "f1")}


def bertkit(*args: str) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bertkit", *args], cwd=ROOT, check=True)
    return round(time.perf_counter() - started, 1)


def _finished_trials(study_dir) -> int:
    """Trials of the study in study_dir that ended (complete, pruned or failed)."""
    path = study_dir / "trials.json"
    if not path.exists():
        return 0
    return sum(t["state"] in ("complete", "pruned", "fail") for t in json.loads(path.read_text())["trials"])


def run(name: str, args) -> list[dict]:
    task, make_config, sets, metric = RUNS[name]
    config = make_config(args)
    overrides = [a for s in sets for a in ("--set", s)]
    default_dir, study_dir = WORK / f"{name}-default", WORK / f"{name}-study"
    if args.resume and (default_dir / "metrics.json").exists():
        default_wall = None  # measured by the run that trained it
    else:
        default_wall = bertkit("train", task, "-c", config, "-o", str(default_dir), "--overwrite", *overrides)
    # --resume continues the study in study_dir (its study.db): the trials already there count
    # towards --trials, so a stopped bench ends with the same 12 trials as one that never stopped
    done = _finished_trials(study_dir) if args.resume else 0
    limit = ["--timeout", args.timeout] if args.timeout else []
    fresh = [] if args.resume else ["--overwrite"]
    study_wall = None
    if args.trials - done > 0:
        study_wall = bertkit("tune", "-c", config, "-o", str(study_dir), "--trials", str(args.trials - done),
                             *fresh, *limit, *overrides)  # fmt: skip
    retrain_wall = None
    if _finished_trials(study_dir) >= args.trials:  # best.yaml trains into study_dir/best
        retrain_wall = bertkit("train", task, "-c", str(study_dir / "best.yaml"), "--overwrite")
    default = json.loads((default_dir / "metrics.json").read_text())
    study = json.loads((study_dir / "trials.json").read_text())
    retrained = study_dir / "best" / "metrics.json"
    tuned = json.loads(retrained.read_text()) if retrain_wall is not None else {}
    states = [t["state"] for t in study["trials"]]
    label = f"tuned ({len(states)} trials: {states.count('pruned')} pruned, {states.count('fail')} failed)"
    common = {"run": name, "train_examples": default["training"]["train_examples"], "metric": metric}
    main = "test" if "test" in default else "validation"
    return [
        {**common, "model": "default", f"validation_{metric}": default["validation"][metric],
         f"{main}_{metric}": default[main][metric], f"{main}_accuracy": default[main].get("accuracy"),
         "wall_seconds": default_wall},
        {**common, "model": label,
         f"validation_{metric}": study["best"]["value"], f"{main}_{metric}": tuned.get(main, {}).get(metric),
         f"{main}_accuracy": tuned.get(main, {}).get("accuracy"), "wall_seconds": study_wall,
         "trial_seconds": round(sum(t["seconds"] or 0 for t in study["trials"]), 1),
         "retrain_seconds": retrain_wall, "best_params": study["best"]["params"]},
    ]  # fmt: skip


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("runs", nargs="*", help="sst2 (the default) and/or squad")
    parser.add_argument("--train", type=int, default=1000)
    parser.add_argument("--validation", type=int, default=200)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--trials", type=int, default=12, help="trials of the study in all (with --resume too)")
    parser.add_argument("--timeout", help="bertkit tune --timeout: start no trial after this long (e.g. 2h)")
    parser.add_argument("--resume", action="store_true", help="continue a stopped bench: its default run and study")
    args = parser.parse_args(argv)
    unknown = [r for r in args.runs if r not in RUNS]
    if unknown:
        parser.error(f"unknown run {unknown[0]}; choose from {', '.join(RUNS)}")
    rows = [row for name in args.runs or ["sst2"] for row in run(name, args)]
    path = save("tune_quality", {"args": vars(args), "runs": rows})
    columns = list(dict.fromkeys(k for r in rows for k in r if k != "best_params"))
    print(table(rows, columns))
    for r in rows:
        if "best_params" in r:
            print(f"{r['run']} best: {r['best_params']}")
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
