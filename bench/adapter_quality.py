"""LoRA adapters against full fine-tuning at the same budget, with the packaged MiniLM (bench, not CI).

Each task trains for the same number of steps both ways, on the same sample, scored on the same
dev sentences, for two seeds:
  sst2:  classify, 200 steps of 16 sentences from SST-2's train.tsv, max_length 64, scored on
         all 872 sentences of dev.tsv (accuracy).
  conll: ner, 200 steps of 16 sentences from CoNLL-2003's eng.train, max_length 128, scored on
         the first 1,000 sentences of eng.testa (entity F1).
Arms: `full` (the task's own default learning rate, auto for this many steps) and `lora` (r 8,
alpha 16, dropout 0.1, target_modules auto) at 5e-4 and 1e-3 on the first seed, then the better
rate on the second. Reported: the score of every run and their medians, trainable parameters,
the size of the bundle's weight files, training time, and peak memory (the peak resident set
size of the training process: each run is its own process). Every run uses one thread
(OMP_NUM_THREADS=1): the machine is shared, and this keeps the arms comparable.

Usage: python bench/adapter_quality.py [sst2] [conll]
Writes bench/results/adapter_quality.json and prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time

from common import DATA, ROOT, minilm_path, require, save, table

STEPS = int(os.environ.get("BENCH_STEPS", 200))  # BENCH_STEPS=2: a quick check that the bench runs
BATCH, SEEDS, LORA_RATES = 16, (1, 2), (5.0e-4, 1.0e-3)
ADAPTER = "train.adapter={kind: lora, r: 8, alpha: 16, dropout: 0.1, target_modules: auto}"
TASKS = {
    "sst2": (
        "classify",
        "configs/local/sst2.yaml",
        "accuracy",
        [
            f"data.train={DATA / 'en/sst2/train.tsv'}",
            f"data.validation={DATA / 'en/sst2/dev.tsv'}",
            "model.max_length=64",
        ],
    ),
    "conll": (
        "ner",
        "configs/local/conll2003.yaml",
        "f1",
        [
            f"data.train.path={DATA / 'en/conll2003/eng.train'}",
            f"data.validation.path={DATA / 'en/conll2003/eng.testa'}",
            "data.max_eval_samples=1000",
            "data.sample=first",
        ],
    ),
}


def one_run(task: str, config: str, out: str, sets: list[str]) -> None:
    """Train in this process, then print its peak resident memory (MiB) as the last line."""
    import resource

    from bertkit.cli import main

    args = ["train", task, "-c", config, "-o", out, "--overwrite", *[a for s in sets for a in ("--set", s)]]
    try:
        main(args)
    except SystemExit as done:
        if done.code:
            raise
    print(json.dumps({"peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))


def run(name: str, arm: str, seed: int, rate: float | None) -> dict:
    task, config, metric, sets = TASKS[name]
    out = ROOT / "outputs" / f"bench-adapter-{name}-{arm}-{seed}-{rate or 'auto'}"
    sets = [
        *sets,
        f"model.name={minilm_path()}",
        f"data.max_train_samples={STEPS * BATCH}",
        f"train.max_steps={STEPS}",
        f"train.batch_size={BATCH}",
        "train.eval_strategy=no",
        "train.logging_steps=50",
        f"train.seed={seed}",
    ]
    sets.append(f"train.learning_rate={rate}" if rate else "train.learning_rate=auto")
    if arm == "lora":
        sets.append(ADAPTER)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--one", task, config, str(out), json.dumps(sets)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    wall = time.perf_counter() - started
    peak = json.loads(done.stdout.strip().splitlines()[-1])["peak_rss_mib"]
    info = json.loads((out / "bertkit.json").read_text())
    weights = [p for p in out.iterdir() if p.suffix == ".safetensors"]
    adapter = info.get("adapter") or {}
    return {
        "task": name,
        "arm": arm,
        "seed": seed,
        "learning_rate": info["config"]["train"]["learning_rate"],
        "resolved_rate": (info["training"].get("learning_rate") or {}).get("learning_rate"),
        metric: info["metrics"]["validation"][metric],
        "trainable_parameters": adapter.get("trainable_parameters"),
        "weights_mib": round(sum(p.stat().st_size for p in weights) / 2**20, 2),
        "train_seconds": info["training"]["train_seconds"],
        "peak_rss_mib": peak,
        "wall_seconds": round(wall, 1),
    }


def bench(name: str, rows: list) -> dict:
    metric = TASKS[name][2]
    full = [run(name, "full", seed, None) for seed in SEEDS]
    rows += full
    first = [run(name, "lora", SEEDS[0], rate) for rate in LORA_RATES]
    rows += first
    best = max(first, key=lambda r: r[metric])
    second = run(name, "lora", SEEDS[1], best["learning_rate"])
    rows.append(second)
    lora = [best, second]
    full_median, lora_median = statistics.median(r[metric] for r in full), statistics.median(r[metric] for r in lora)
    return {
        "metric": metric,
        "full_median": full_median,
        "lora_median": lora_median,
        "lora_rate": best["learning_rate"],
        "gap_points": round(100 * (full_median - lora_median), 2),
        "full_per_seed": [r[metric] for r in full],
        "lora_per_seed": [r[metric] for r in lora],
    }


def main(names: list[str]) -> None:
    require(DATA / "en/sst2/train.tsv")
    require(DATA / "en/conll2003/eng.train")
    rows, summary = [], {}
    for name in names:
        summary[name] = bench(name, rows)
        save("adapter_quality", {"steps": STEPS, "batch_size": BATCH, "seeds": SEEDS, "summary": summary, "runs": rows})
    for row in rows:  # the full model's parameter count, for the table
        row.setdefault("trainable_parameters", None)
    columns = ["task", "arm", "seed", "learning_rate", "accuracy", "f1", "trainable_parameters", "weights_mib"]
    print(table(rows, [*columns, "train_seconds", "peak_rss_mib"]))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one_run(sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
    else:
        main([a for a in sys.argv[1:] if a in TASKS] or list(TASKS))
