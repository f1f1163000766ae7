"""Peak memory of mlm-adapt with and without `data.streaming` (bench, not CI).

Corpora are made in a temporary folder by repeating ../shared/data/en/text (scicite and biomed
sentences, each line numbered so no two are equal) up to a size, and deleted afterwards. Every
run is `bertkit train mlm-adapt` in its own process, polled every 0.2 s: peak is the kernel's
high-water mark of resident memory (VmHWM), so nothing between polls is missed.

The model is a tiny random BERT (`bertkit model tiny`: 2 layers, 64 wide, a 2,000-entry
vocabulary learnt from the corpus), so that the model's own memory is small and training is fast
enough to stream a whole corpus; what is measured is what the data costs.

  in memory   data.streaming: false, data.cache: false: the whole corpus read and tokenized
              before training (the peak grows with the corpus); --pass-mb, --small-mb / 4, --small-mb
  streamed    data.streaming: true: one full pass over the --pass-mb corpus and on into a second
              (max_steps past one epoch), and --big-steps on the --big-mb corpus (a file far
              larger than the process ever holds; only what the steps need is read)

Usage: python bench/mlm_streaming_memory.py [--small-mb 40] [--pass-mb 2] [--big-mb 2048] [--big-steps 100]
       python bench/mlm_streaming_memory.py --big-only --big-steps 600   (memory over a long stream)
       python bench/mlm_streaming_memory.py --data-only 80000   (the stream alone, MiniLM's tokenizer, no model)
Writes bench/results/mlm_streaming_memory.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from common import DATA, ROOT, minilm_path, require, save, table

SOURCES = [DATA / "en/text/scicite_sentences.txt", DATA / "en/text/biomed_sentences_tokenized.txt"]
BLOCK, BATCH = 128, 32


def make_corpus(path: Path, megabytes: float) -> Path:
    """The shared sentences, numbered, again and again, up to `megabytes`."""
    lines = [line for s in SOURCES for line in require(s).read_text(encoding="utf-8").splitlines() if line.strip()]
    want, written, number = int(megabytes * 2**20), 0, 0
    with open(path, "w", encoding="utf-8") as out:
        while written < want:
            line = f"{number} {lines[number % len(lines)]}\n"
            out.write(line)
            written += len(line.encode("utf-8"))
            number += 1
    return path


def watch(args: list[str]) -> dict:
    """Run a command: its peak resident memory (VmHWM), and its resident memory at each training
    log line (what training holds, after start-up and before the bundle is written)."""
    started = time.perf_counter()
    process = subprocess.Popen(args, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    status, peak, rss, logged, output = Path(f"/proc/{process.pid}/status"), 0, 0, [], []

    def read():
        for line in process.stdout:
            output.append(line)
            if "loss=" in line and "train_loss" not in line:
                logged.append(rss)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    while process.poll() is None:
        try:
            fields = dict(line.split(":", 1) for line in status.read_text().splitlines() if ":" in line)
            peak = max(peak, int(fields["VmHWM"].split()[0]))
            rss = int(fields["VmRSS"].split()[0])
        except (OSError, KeyError, ValueError):
            pass
        time.sleep(0.2)
    reader.join()
    if process.returncode:
        sys.exit(f"{' '.join(args)} failed:\n{''.join(output)[-3000:]}")
    training = [rss // 1024 for rss in logged] or None  # at each training log line (5 per run)
    wall = round(time.perf_counter() - started, 1)
    return {"peak_mb": peak // 1024, "training_rss_mb": training, "wall_seconds": wall}


def train(folder: Path, model: Path, corpus: Path, streaming: bool, steps: int) -> dict:
    config = folder / "run.yaml"
    config.write_text(
        f"task: mlm-adapt\nmodel:\n  name: {model}\n  max_length: {BLOCK}\n"
        f"data:\n  train: {corpus}\n  streaming: {str(streaming).lower()}\n  cache: false\n  max_eval_samples: 500\n"
        f"train:\n  max_steps: {steps}\n  batch_size: {BATCH}\n  eval_strategy: 'no'\n"
        f"  logging_steps: {max(1, steps // 5)}\n  learning_rate: 1.0e-3\noutput_dir: {folder / 'out'}\n"
    )
    bertkit = [sys.executable, "-m", "bertkit", "train", "mlm-adapt", "-c", str(config), "--overwrite"]
    row = watch(bertkit)
    training = json.loads((folder / "out" / "bertkit.json").read_text())["training"]
    mb = round(corpus.stat().st_size / 2**20, 1)
    return {"corpus_mb": mb, "streaming": streaming, **row, "steps": training["train_steps"],
            "examples": training.get("train_examples")}  # fmt: skip


def data_only(corpus: Path, blocks: int) -> dict:
    """The streamed features alone, no model: this process' resident memory every 10,000 blocks."""
    from bertkit.config import load_config
    from bertkit.core.run_info import RunInfo
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks import get_task

    def rss() -> int:
        return int(next(line for line in open("/proc/self/status") if line.startswith("VmRSS")).split()[1]) // 1024

    sets = {"model.name": minilm_path(), "model.max_length": BLOCK, "data.train": str(corpus),
            "data.streaming": True, "train.max_steps": 1, "data.max_eval_samples": 100}  # fmt: skip
    cfg = load_config(None, task="mlm-adapt", **sets)
    task = get_task("mlm-adapt")
    raw = task.training.load(cfg)
    tokenizer = load_tokenizer(minilm_path(), None, False)
    info = RunInfo(task.training.setup(raw, cfg))
    info = info.replace(**task.training.tokenizer_facts(tokenizer, info))
    series = []
    for i, _ in enumerate(task.training.prepare(raw, tokenizer, info)["train"]):
        if i % 10000 == 0:
            series.append(rss())
        if i >= blocks:
            break
    return {"corpus_mb": round(corpus.stat().st_size / 2**20), "blocks": blocks, "rss_every_10000_blocks_mb": series}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--small-mb", type=float, default=40, help="the larger in-memory corpus")
    parser.add_argument("--pass-mb", type=float, default=2, help="the corpus streamed whole, and on")
    parser.add_argument("--big-mb", type=float, default=2048, help="the corpus streamed for --big-steps")
    parser.add_argument("--big-steps", type=int, default=100)
    parser.add_argument("--big-only", action="store_true", help="only the streamed run on the big corpus")
    parser.add_argument("--data-only", type=int, default=0, help="only stream this many blocks, no model")
    options = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="bertkit-stream-bench-", dir="/tmp"))
    try:
        if options.data_only:
            row = data_only(make_corpus(folder / "data.txt", 60), options.data_only)
            print(row)
            save("mlm_streaming_memory_data", row)
            return
        model = folder / "tiny"
        vocab = make_corpus(folder / "vocab.txt", 2)
        subprocess.run(
            [sys.executable, "-m", "bertkit", "model", "tiny", "--from", minilm_path(),
             "-o", str(model), "--vocab-from", str(vocab), "--vocab-size", "2000"],
            cwd=ROOT, check=True, capture_output=True,
        )  # fmt: skip
        rows = []

        def run(corpus, streaming, steps):
            rows.append(train(folder, model, corpus, streaming, steps))
            print(rows[-1], flush=True)
            return rows[-1]

        if not options.big_only:
            whole = make_corpus(folder / "pass.txt", options.pass_mb)
            blocks = run(whole, False, 20)["examples"]
            run(whole, True, int(1.2 * blocks / BATCH) + 1)  # one pass and a fifth of the next
            for megabytes in (options.small_mb / 4, options.small_mb):
                run(make_corpus(folder / f"in-memory-{megabytes}.txt", megabytes), False, 20)
        big = make_corpus(folder / "big.txt", options.big_mb)
        run(big, True, options.big_steps)
        big.unlink()
        columns = ["corpus_mb", "streaming", "steps", "examples", "peak_mb", "training_rss_mb", "wall_seconds"]
        print(table(rows, columns))
        print("saved", save("mlm_streaming_memory" + ("_big" if options.big_only else ""), {"rows": rows}))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
