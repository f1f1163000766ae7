"""`bertkit predict` as one process against two (torchrun, gloo, CPU), same model, texts and settings.

The model is the packaged all-MiniLM-L6-v2 with a two-label classification head (untrained:
speed does not depend on what the head learnt), saved as a plain Hugging Face folder. The texts are
the first N sentences of SST-2's training file. Each run is the whole command in its own processes,
as a user runs it (interpreter start, imports, model load, predicting, writing), timed from outside:
  - one: `python -m bertkit predict -m M -i texts.txt -o one.jsonl` (torch's default thread count);
  - two: `torchrun --nproc_per_node 2 -m bertkit predict ...` (torchrun gives each process one thread
    unless OMP_NUM_THREADS says otherwise).
Runs alternate, R repeats each; medians are reported, ratio = one's time / two's time (>1: two
processes are faster). The two outputs must be byte-identical, else the script fails.

The honest reading: two processes split the texts, not the CPU. On a machine with C cores, one process
already uses C threads; two processes use one each (or C/2 with OMP_NUM_THREADS), so the gain comes
from what does not parallelise inside one process (tokenizing, Python work between batches), and it
costs a second interpreter, model load and the merge. On GPUs, each process has its own.

Usage: python bench/sharded_predict.py [--n 3000] [--repeats 3] [--threads T]
Writes bench/results/sharded_predict.json and prints a table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATA, require, save, table
from serve_load import classifier, free_port

BIN = Path(sys.executable).parent


def timed(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        sys.exit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS for every process")
    args = parser.parse_args()
    # SST-2's training file: its dev file (serve_load.py's) has 872 sentences, fewer than asked here
    rows = require(DATA / "en" / "sst2" / "train.tsv").read_text(encoding="utf-8").splitlines()[1 : args.n + 1]
    sentences = [row.split("\t")[0] for row in rows]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    if args.threads:
        env["OMP_NUM_THREADS"] = str(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        model = classifier(folder)  # the same head as serve_load.py's (untrained: speed only)
        texts = folder / "texts.txt"
        texts.write_text("\n".join(sentences) + "\n", encoding="utf-8")
        predict = ["-m", "bertkit", "predict", "-m", str(model), "-i", str(texts), "--batch-size", "32"]
        times: dict[str, list[float]] = {"one": [], "two": []}
        for _ in range(args.repeats):
            times["one"].append(timed([sys.executable, *predict, "-o", str(folder / "one.jsonl")], env))
            launcher = [str(BIN / "torchrun"), "--nproc_per_node", "2", "--master_port", str(free_port())]
            times["two"].append(timed([*launcher, *predict, "-o", str(folder / "two.jsonl")], env))
        identical = (folder / "one.jsonl").read_bytes() == (folder / "two.jsonl").read_bytes()
    if not identical:
        sys.exit("the two outputs differ: sharded predict is broken")
    one, two = statistics.median(times["one"]), statistics.median(times["two"])
    rows = [
        {"processes": 1, "seconds": one, "texts/s": args.n / one, "runs": times["one"]},
        {"processes": 2, "seconds": two, "texts/s": args.n / two, "runs": times["two"]},
    ]
    result = {
        "texts": args.n,
        "repeats": args.repeats,
        "omp_num_threads": args.threads,
        "cpu_count": os.cpu_count(),
        "median_seconds": {"one": one, "two": two},
        "ratio_one_over_two": one / two,
        "runs": times,
        "outputs_identical": identical,
    }
    print(table([{**r, "runs": ", ".join(f"{t:.1f}" for t in r["runs"])} for r in rows], list(rows[0])))
    print(f"ratio (one / two): {one / two:.2f}; outputs byte-identical: {identical}")
    print(f"written to {save('sharded_predict', result)}")


if __name__ == "__main__":
    main()
