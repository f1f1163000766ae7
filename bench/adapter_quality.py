"""LoRA adapters against full fine-tuning at the same budget, with the packaged MiniLM (bench, not CI).

Each task trains for the same number of steps both ways, on the same sample, scored on the same
dev sentences, for two seeds (a small budget: the machine's two cores were shared by seven jobs):
  sst2:  classify, 100 steps of 16 sentences sampled from SST-2's train.tsv, max_length 64,
         scored on the first 500 sentences of dev.tsv (accuracy).
  conll: ner, 100 steps of 16 sentences sampled from CoNLL-2003's eng.train, max_length 128,
         scored on the first 500 sentences of eng.testa (entity F1).
Arms: `full` (the task's own default learning rate, auto for this many steps) and `lora` (r 8,
alpha 16, dropout 0.1, target_modules auto) at 5e-4 and 1e-3 on the first seed, then the better
rate on the second. Reported: the score of every run and their medians, trainable parameters,
the size of the bundle's weight files, training time, and peak memory (the peak resident set
size of the training process: each run is its own process). Every run uses one thread
(OMP_NUM_THREADS=1), BENCH_WORKERS at a time (2): the machine is shared, so times are noisy.
A run whose bundle and peak-memory file (`outputs/bench-adapter-*.peak.json`) are there already
is read, not trained again: a bench cut short goes on where it stopped.

Usage: [BENCH_WORKERS=4] [BENCH_STEPS=300] [BENCH_LORA_RATES=1e-3,2e-3] python bench/adapter_quality.py [sst2] [conll]
Writes bench/results/adapter_quality_STEPS.json and prints a table.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from common import DATA, ROOT, minilm_path, require, save, table

STEPS = int(os.environ.get("BENCH_STEPS", 100))  # BENCH_STEPS=2: a quick check that the bench runs
BATCH, EVAL, SEEDS = 16, 500, (1, 2)
# the LoRA rates tried on the first seed (BENCH_LORA_RATES=1e-3,2e-3): the better one runs the second
LORA_RATES = tuple(float(r) for r in os.environ.get("BENCH_LORA_RATES", "5e-4,1e-3").split(","))
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
            f"data.max_eval_samples={EVAL}",
            "data.sample=first",
        ],
    ),
    "conll": (
        "ner",
        "configs/local/conll2003.yaml",
        "f1",
        [
            f"data.train.path={DATA / 'en/conll2003/eng.train'}",
            f"data.validation.path={DATA / 'en/conll2003/eng.testa'}",
            f"data.max_eval_samples={EVAL}",
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
    peak = {"peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}
    Path(f"{out}.peak.json").write_text(json.dumps(peak))  # beside the bundle: a finished run is reused


def run(name: str, arm: str, seed: int, rate: float | None) -> dict:
    task, config, metric, sets = TASKS[name]
    # BENCH_TAG names a LoRA variant (a code change measured against the full runs already there)
    tag = f"-{os.environ['BENCH_TAG']}" if arm == "lora" and os.environ.get("BENCH_TAG") else ""
    out = ROOT / "outputs" / f"bench-adapter-{name}-{STEPS}-{arm}-{seed}-{rate or 'auto'}{tag}"
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
    peak_file = Path(f"{out}.peak.json")
    if not ((out / "bertkit.json").is_file() and peak_file.is_file()):  # else finished by an earlier run
        subprocess.run(
            [sys.executable, __file__, "--one", task, config, str(out), json.dumps(sets)],
            cwd=ROOT,
            check=True,
            capture_output=True,
            env={**os.environ, "OMP_NUM_THREADS": "1"},
        )
    wall = time.perf_counter() - started
    peak = json.loads(peak_file.read_text())["peak_rss_mib"]
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
        "model_parameters": adapter.get("parameters"),
        "weights_mib": round(sum(p.stat().st_size for p in weights) / 2**20, 2),
        "train_seconds": info["training"]["train_seconds"],
        "peak_rss_mib": peak,
        "wall_seconds": round(wall, 1),
    }


def in_parallel(jobs: list[tuple]) -> list[dict]:
    """`run(*job)` for each job, BENCH_WORKERS at a time (2; each run is one thread)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(int(os.environ.get("BENCH_WORKERS", 2))) as pool:
        return list(pool.map(lambda job: run(*job), jobs))


def summary(name: str, rows: list, second: list) -> dict:
    metric = TASKS[name][2]
    full = [r for r in rows if r["task"] == name and r["arm"] == "full"]
    first = [r for r in rows if r["task"] == name and r["arm"] == "lora" and r["seed"] == SEEDS[0]]
    best = max(first, key=lambda r: r[metric])
    lora = [best, *(r for r in second if r["task"] == name)]
    full_median, lora_median = statistics.median(r[metric] for r in full), statistics.median(r[metric] for r in lora)
    return {
        "metric": metric,
        "full_median": full_median,
        "lora_median": lora_median,
        "lora_rate": best["learning_rate"],
        "gap_points": round(100 * (full_median - lora_median), 2),
        "full_per_seed": [r[metric] for r in full],
        "lora_per_seed": [r[metric] for r in lora],
        "lora_rates_first_seed": {r["learning_rate"]: r[metric] for r in first},
    }


def best_rate(name: str, rows: list) -> float:
    metric = TASKS[name][2]
    first = [r for r in rows if r["task"] == name and r["arm"] == "lora"]
    return max(first, key=lambda r: r[metric])["learning_rate"]


def main(names: list[str]) -> None:
    require(DATA / "en/sst2/train.tsv")
    require(DATA / "en/conll2003/eng.train")
    settings = {"steps": STEPS, "batch_size": BATCH, "eval_sentences": EVAL, "seeds": SEEDS}
    rows = in_parallel([(name, "lora", SEEDS[0], rate) for name in names for rate in LORA_RATES])
    save(f"adapter_quality_{STEPS}", {**settings, "runs": rows})
    second = [(name, "lora", SEEDS[1], best_rate(name, rows)) for name in names]
    done = in_parallel([*second, *((name, "full", seed, None) for name in names for seed in SEEDS)])
    second, rows = done[: len(second)], [*done[len(second) :], *rows, *done[: len(second)]]
    results = {name: summary(name, rows, second) for name in names}
    save(f"adapter_quality_{STEPS}", {**settings, "summary": results, "runs": rows})
    for row in rows:  # the full model's parameter count, for the table
        row.setdefault("trainable_parameters", None)
    columns = ["task", "arm", "seed", "learning_rate", "accuracy", "f1", "trainable_parameters", "weights_mib"]
    print(table(rows, [*columns, "train_seconds", "peak_rss_mib"]))
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        one_run(sys.argv[2], sys.argv[3], sys.argv[4], json.loads(sys.argv[5]))
    else:
        main([a for a in sys.argv[1:] if a in TASKS] or list(TASKS))
