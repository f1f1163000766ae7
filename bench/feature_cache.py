"""What the on-disk feature cache saves (bench, not CI): the time `bertkit train` spends turning
examples into features, on a first run (tokenized, then saved), a second run with the same inputs
(read back from the cache), and a run with model.max_length changed (rebuilt: a new entry).

Each run is its own process, started cold, through the same path as `bertkit train` (the task's
load / setup / tokenizer, then `training.feature_cache.cached_prepare`), with the packaged MiniLM
and an empty cache folder made for the bench. Reading the data files is not cached and is timed
apart.

  sst2:  configs/local/sst2.yaml (67,349 train + 872 dev sentences, max_length 128)
  imdb:  configs/local/imdb.yaml without its sampling (25,000 train + 25,000 test reviews,
         max_length 256, HTML stripped)

Usage: python bench/feature_cache.py [sst2] [imdb]
Writes bench/results/feature_cache.json and prints a table.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time

from common import DATA, RESULTS, ROOT, require, save, table

RUNS = {
    "sst2": ("configs/local/sst2.yaml", DATA / "en/sst2/train.tsv", []),
    "imdb": (
        "configs/local/imdb.yaml",
        DATA / "en/imdb/train.jsonl.gz",
        ["data.max_train_samples=null", "data.max_eval_samples=null"],
    ),
}


def one(config: str, sets: list[str]) -> dict:
    """One run's timings, in this process (called by `main` in a fresh process per run)."""
    from bertkit.config import load_config
    from bertkit.core.run_info import RunInfo
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks import get_task
    from bertkit.training.feature_cache import cached_prepare

    cfg = load_config(config, sets)
    task = get_task(cfg.task)
    started = time.perf_counter()
    raw = task.training.load(cfg)
    info = RunInfo(task.training.setup(raw, cfg))
    from bertkit.core import models

    tokenizer = load_tokenizer(models.resolve(cfg.model.name, None), None, False)
    info = info.replace(**task.training.tokenizer_facts(tokenizer, info))
    read = time.perf_counter() - started
    started = time.perf_counter()
    features, entry, hit = cached_prepare(
        lambda: task.training.prepare(raw, tokenizer, info), raw, tokenizer, info, task.name, say=lambda _: None
    )
    features_seconds = time.perf_counter() - started
    return {
        "read_seconds": round(read, 2),
        "features_seconds": round(features_seconds, 2),
        "cache": "hit" if hit else "built",
        "entry": entry.name,
        "entry_mb": round(sum(f.stat().st_size for f in entry.rglob("*") if f.is_file()) / 2**20, 1),
        "examples": {role: len(split) for role, split in raw.items()},
        "features": {role: len(split) for role, split in features.items()},
    }


def main(names: list[str]) -> None:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bertkit-bench-cache-") as cache:
        env = {**os.environ, "BERTKIT_CACHE": cache, "OMP_NUM_THREADS": "1"}
        for name in names:
            config, data, sets = RUNS[name]
            require(data)
            for run, extra in (("first", []), ("second", []), ("max_length changed", ["model.max_length=64"])):
                args = [sys.executable, __file__, "--one", config, *sets, *extra]
                done = subprocess.run(args, cwd=ROOT, env=env, check=True, capture_output=True, text=True)
                row = json.loads(done.stdout.strip().splitlines()[-1])
                rows.append({"data": name, "run": run, **row})
                print(rows[-1], flush=True)
    earlier = RESULTS / "feature_cache.json"  # rows of the data sets not run this time are kept
    if earlier.exists():
        rows = [r for r in json.loads(earlier.read_text())["rows"] if r["data"] not in names] + rows
    columns = ["data", "run", "cache", "read_seconds", "features_seconds", "entry_mb", "entry"]
    print(table(rows, columns))
    print("saved", save("feature_cache", {"rows": rows}))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--one"]:
        print(json.dumps(one(sys.argv[2], sys.argv[3:])))
    else:
        main(sys.argv[1:] or list(RUNS))
