"""The GPU paths, measured (bench, not CI: it needs a CUDA GPU). SST-2, MiniLM, `bertkit train
classify` once per `train.precision` (fp32, bf16, fp16; `auto` picks bf16 where the GPU has it),
then `bertkit predict` on the GPU.

  training:   N training sentences (default 8,000; seeded sample), max_length 64, batch 32,
              1 epoch, scored on the 872 dev sentences. Per precision: the Trainer's samples/s,
              the run's wall time, dev accuracy, and the GPU memory in use at its peak (nvidia-smi
              polled every 0.1 s while the run lasts: the process's whole footprint, CUDA context
              and the allocator's cache included).
  prediction: the bf16-trained bundle over the dev sentences x COPIES, texts/s, median of 3.

Usage: python bench/gpu_check.py [--train 8000] [--copies 8]
Writes bench/results/gpu_check.json and prints a table.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import subprocess
import threading
import time

from common import DATA, ROOT, minilm_path, require, save, table, train_bundle

WORK = ROOT / "outputs" / "bench-gpu"


class PeakMemory:
    """The largest `memory.used` nvidia-smi reports while the block runs, in MiB."""

    def __enter__(self):
        self.peak, self.running = 0, True
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.thread.start()
        return self

    def _poll(self):
        while self.running:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
            ).stdout.split()
            if out:
                self.peak = max(self.peak, int(out[0]))
            time.sleep(0.1)

    def __exit__(self, *exc):
        self.running = False
        self.thread.join()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=8000)
    parser.add_argument("--copies", type=int, default=8)
    args = parser.parse_args()
    import torch

    rows = list(csv.DictReader(open(require(DATA / "en/sst2/train.tsv"), encoding="utf-8"), delimiter="\t"))
    random.Random(0).shuffle(rows)
    WORK.mkdir(parents=True, exist_ok=True)
    with open(WORK / "train.tsv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["text", "label"])
        writer.writerows([r["text"].strip(), r["label"]] for r in rows[: args.train])
    config = WORK / "classify.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 64\n"
        f"data:\n  train: {WORK / 'train.tsv'}\n  validation: {DATA / 'en/sst2/dev.tsv'}\n"
        "train:\n  epochs: 1\n  batch_size: 32\n  learning_rate: 5.0e-5\n  logging_steps: 50\n"
    )
    results = []
    for precision in ("fp32", "bf16", "fp16"):
        print(f"== {precision}", flush=True)
        with PeakMemory() as memory:
            info, wall = train_bundle("classify", str(config), f"gpu-{precision}", [f"train.precision={precision}"])
        results.append(
            {
                "precision": info["training"]["precision"],
                "samples_per_s": info["training"]["train_samples_per_second"],
                "train_seconds": info["training"]["train_seconds"],
                "wall_seconds": wall,
                "dev_accuracy": info["metrics"]["validation"]["accuracy"],
                "peak_gpu_mib": memory.peak,
            }
        )
        print(table(results[-1:], list(results[-1])), flush=True)

    from bertkit.prediction import predict_file

    dev = list(csv.DictReader(open(DATA / "en/sst2/dev.tsv", encoding="utf-8"), delimiter="\t"))
    texts = WORK / "predict.txt"
    texts.write_text("\n".join(r["text"].strip() for r in dev * args.copies) + "\n", encoding="utf-8")
    bundle = str(ROOT / "outputs" / "bench-gpu-bf16")
    predict_file(bundle, str(texts), str(WORK / "warm.jsonl"))  # CUDA start-up and the model's first load
    times = []
    for _ in range(3):
        started = time.perf_counter()
        predict_file(bundle, str(texts), str(WORK / "predictions.jsonl"))
        times.append(time.perf_counter() - started)
    count = len(dev) * args.copies
    predicted = {"texts": count, "texts_per_s": round(count / statistics.median(times))}
    result = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "settings": vars(args),
        "training": results,
        "predict": predicted,
    }
    path = save("gpu_check", result)
    print(table(results, list(results[0])))
    print(f"predict (bf16-trained bundle, GPU): {predicted}")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
