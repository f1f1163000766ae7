"""Classification speed against peers measured in the same run, same model, data and settings.

A. Training on an SST-2 sample (packaged MiniLM, max length 128, batch 16, lr 5e-5, 1 epoch):
   - peer: a plain Trainer recipe that pads every example to max_length (tutorials and the
     Hugging Face example scripts do this by default);
   - bertkit with random batches (dynamic padding), and with its shuffled length groups.
   Reports training examples/s, padding efficiency (real tokens / computed tokens) and accuracy
   on the SST-2 dev set.
B. Predict on texts of mixed lengths (SST-2 sentences and IMDb reviews, shuffled) with the bundle
   trained in A: bertkit's length-sorted batches against `transformers.pipeline` with batch sizes
   1 and 32. Median of 3 timings.

Usage: python bench/classify_speed.py [--train-samples 1600] [--predict-texts 800]
Writes bench/results/classify_speed.json and prints tables.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import itertools
import json
import random
import sys
import time

from common import DATA, ROOT, median_time, minilm_path, require, save, table

MAX_LENGTH, BATCH, LR, SEED = 128, 16, 5e-5, 42


class CountingCollator:
    """Wraps a collator and records the real and computed (padded) tokens of every batch."""

    def __init__(self, inner):
        self.inner, self.batches = inner, []

    def __call__(self, features):
        batch = self.inner(features)
        mask = batch["attention_mask"]
        self.batches.append((int(mask.sum()), int(mask.numel())))
        return batch

    def efficiency(self, first: int | None = None) -> float:
        counted = self.batches[:first]
        return sum(r for r, _ in counted) / sum(c for _, c in counted)


def sst2(path, n=None):
    rows = list(csv.DictReader(open(path, encoding="utf-8"), delimiter="\t", quoting=csv.QUOTE_NONE))
    if n:
        rows = random.Random(SEED).sample(rows, n)
    return [r["text"] for r in rows], [int(r["label"]) for r in rows]


def train_peer(train_file, dev_file, n):
    """The pad-to-max recipe, written as tutorials write it."""
    import datasets
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        Trainer,
        TrainingArguments,
        default_data_collator,
    )

    texts, labels = sst2(train_file, n)
    dev_texts, dev_labels = sst2(dev_file)
    tok = AutoTokenizer.from_pretrained(minilm_path())

    def encode(batch):
        return tok(batch["text"], padding="max_length", truncation=True, max_length=MAX_LENGTH)

    train = datasets.Dataset.from_dict({"text": texts, "label": labels}).map(
        encode, batched=True, remove_columns=["text"]
    )
    dev = datasets.Dataset.from_dict({"text": dev_texts, "label": dev_labels}).map(
        encode, batched=True, remove_columns=["text"]
    )
    model = AutoModelForSequenceClassification.from_pretrained(minilm_path(), num_labels=2)
    collator = CountingCollator(default_data_collator)
    args = TrainingArguments(
        output_dir=str(ROOT / "outputs" / "bench-peer"),
        num_train_epochs=1,
        per_device_train_batch_size=BATCH,
        per_device_eval_batch_size=64,
        learning_rate=LR,
        seed=SEED,
        report_to="none",
        save_strategy="no",
        logging_steps=50,
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=collator)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    efficiency = collator.efficiency()
    accuracy = float((trainer.predict(dev).predictions.argmax(-1) == dev_labels).mean())
    return {
        "recipe": "Trainer, pad to max_length",
        "examples_per_s": len(texts) / seconds,
        "train_seconds": seconds,
        "padding_efficiency": efficiency,
        "dev_accuracy": accuracy,
    }


def train_bertkit(train_file, dev_file, n, grouped: bool):
    from bertkit import training
    from bertkit.config import load_config
    from bertkit.tasks import get_task

    out = ROOT / "outputs" / f"bench-bertkit-{'grouped' if grouped else 'random'}"
    cfg = load_config(
        None,
        [
            "model.name=sentence-transformers/all-MiniLM-L6-v2",
            f"model.max_length={MAX_LENGTH}",
            f"data.train={train_file}",
            f"data.validation={dev_file}",
            f"data.max_train_samples={n}",
            f"train.batch_size={BATCH}",
            f"train.learning_rate={LR}",
            "train.epochs=1",
            f"train.seed={SEED}",
            "train.eval_strategy=no",
            "classify.strategy=finetune",  # fine-tuning against the Trainer, whatever the sample's size
            "train.warmup_ratio=0",
            "train.weight_decay=0",
            "train.logging_steps=50",
            f"train.group_by_length={str(grouped).lower()}",
            f"output_dir={out}",
        ],
    )
    counters = []
    task = get_task("classify")
    original = task.training.collator

    def counting(tokenizer, cfg):
        counters.append(CountingCollator(original(tokenizer, cfg)))
        return counters[-1]

    task.training.collator = counting  # on this instance only: the registered task is the one training asks
    try:
        training.train(cfg, overwrite=True)
    finally:
        del task.training.collator
    info = json.loads((out / "bertkit.json").read_text())
    seconds = info["training"]["train_seconds"]
    steps = info["training"]["train_steps"]  # training batches come first; then the dev set is scored
    return {
        "recipe": f"bertkit, {'shuffled length groups' if grouped else 'random batches'}",
        "examples_per_s": n / seconds,
        "train_seconds": seconds,
        "padding_efficiency": counters[0].efficiency(steps),
        "dev_accuracy": info["metrics"]["validation"]["accuracy"],
        "bundle": str(out),
    }


def predict_texts(n):
    rng = random.Random(SEED)
    short, _ = sst2(require(DATA / "en/sst2/dev.tsv"))
    with gzip.open(require(DATA / "en/imdb/test.jsonl.gz"), "rt", encoding="utf-8") as handle:
        reviews = [json.loads(line)["text"].replace("<br />", " ") for line in itertools.islice(handle, 5000)]
    texts = rng.sample(short, min(len(short), n * 3 // 4)) + rng.sample(reviews, n - min(len(short), n * 3 // 4))
    rng.shuffle(texts)
    return texts


def predict_speed(bundle_dir, texts):
    from transformers import pipeline

    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle
    from bertkit.tasks.contract.options import PredictOptions

    bundle = open_bundle(bundle_dir)
    task = get_task("classify")
    tok = bundle.load_tokenizer()
    model = bundle.load_model(task.auto_model, "cpu")
    records = [{"text": t} for t in texts]
    ours = []

    def run_bertkit():
        ours[:] = list(task.prediction.predict(model, tok, bundle.info, records, PredictOptions(batch_size=32)))

    pipe = pipeline("text-classification", model=bundle_dir, device="cpu")
    theirs = {}

    def run_pipeline(bs):
        theirs[bs] = pipe(texts, batch_size=bs, truncation=True, max_length=MAX_LENGTH)

    rows = [{"method": "bertkit predict (length-sorted, batch 32)", "seconds": median_time(run_bertkit)}]
    for bs in (1, 32):
        rows.append(
            {"method": f"transformers.pipeline, batch_size={bs}", "seconds": median_time(lambda b=bs: run_pipeline(b))}
        )
    for row in rows:
        row["texts_per_s"] = len(texts) / row["seconds"]
    agree = sum(a["label"] == b["label"] for a, b in zip(ours, theirs[32], strict=True)) / len(texts)
    from bertkit.core.inference import padding_efficiency

    lengths = [len(x) for x in tok(texts, truncation=True, max_length=MAX_LENGTH)["input_ids"]]
    return rows, agree, padding_efficiency(lengths, 32, sort=True), padding_efficiency(lengths, 32, sort=False)


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-samples", type=int, default=1600)
    parser.add_argument("--predict-texts", type=int, default=800)
    args = parser.parse_args(argv)
    train_file, dev_file = require(DATA / "en/sst2/train.tsv"), require(DATA / "en/sst2/dev.tsv")

    rows = [train_peer(train_file, dev_file, args.train_samples)]
    for grouped in (False, True):
        rows.append(train_bertkit(train_file, dev_file, args.train_samples, grouped))
    peer = rows[0]["examples_per_s"]
    for row in rows:
        row["speedup"] = row["examples_per_s"] / peer
    print(
        f"\nA. training, SST-2 sample of {args.train_samples}, MiniLM, max length {MAX_LENGTH}, batch {BATCH}, 1 epoch"
    )
    print(table(rows, ["recipe", "examples_per_s", "speedup", "padding_efficiency", "dev_accuracy", "train_seconds"]))

    texts = predict_texts(args.predict_texts)
    predict_rows, agree, sorted_eff, unsorted_eff = predict_speed(rows[1]["bundle"], texts)
    base = next(r for r in predict_rows if r["method"].endswith("batch_size=32"))["texts_per_s"]
    for row in predict_rows:
        row["vs_pipeline_32"] = row["texts_per_s"] / base
    print(f"\nB. predict, {len(texts)} texts of mixed lengths (SST-2 + IMDb), median of 3")
    print(table(predict_rows, ["method", "texts_per_s", "vs_pipeline_32", "seconds"]))
    print(
        f"label agreement with pipeline: {agree:.4f}; "
        f"padding efficiency, sorted {sorted_eff:.3f} vs input order {unsorted_eff:.3f}"
    )
    path = save(
        "classify_speed",
        {
            "training": rows,
            "predict": predict_rows,
            "predict_label_agreement": agree,
            "predict_padding_efficiency": {"length_sorted": sorted_eff, "input_order": unsorted_eff},
            "settings": {
                "train_samples": args.train_samples,
                "max_length": MAX_LENGTH,
                "batch_size": BATCH,
                "learning_rate": LR,
            },
        },
    )
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
