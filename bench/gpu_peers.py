"""The runs bench/gpu_speed.py times, each in a process of its own: the peers (the plain Hugging
Face Trainer, `pipeline()`, sentence-transformers' `encode`, bare PyTorch loops) and bertkit's
in-process measurements (predict and embed loops, the profiled training step). Each prints one
line `RESULT {json}` last. The peers follow ../shared/bench/gpu_side_by_side.py's definitions
(they are the issue's baselines), written again here.

    python bench/gpu_peers.py NAME ARGS...   (gpu_speed.py calls these; see each function)
"""

from __future__ import annotations

import csv
import json
import statistics
import sys
import time
from pathlib import Path

MAX_LENGTH, BATCH, LEARNING_RATE = 64, 32, 5e-5


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def _half():
    """The peers' precision: bf16 on a GPU that has it (as the issue's runs), else none."""
    import torch

    return torch.bfloat16 if _cuda() and torch.cuda.is_bf16_supported() else None


def _sync() -> None:
    if _cuda():
        import torch

        torch.cuda.synchronize()


def _rows(tsv: str, n: int) -> list[dict]:
    with open(tsv, encoding="utf-8") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))[:n]


def _texts(path: str) -> list[str]:
    return [line.rstrip("\n") for line in open(path, encoding="utf-8")]


def _median_rate(count: int, run, repeats: int = 3) -> float:
    """count / the median of `repeats` timed runs, after one untimed run (CUDA kernels' first use)."""
    run()
    times = []
    for _ in range(repeats):
        _sync()
        started = time.perf_counter()
        run()
        _sync()
        times.append(time.perf_counter() - started)
    return round(count / statistics.median(times), 1)


def profiler_callback(path: str, wait: int = 8, active: int = 10):
    """A Trainer callback that profiles `active` optimizer steps after `wait` (torch.profiler) and
    writes their summary to `path`: the ops by device time (CPU time without a GPU) and the host
    reads of device values per step (aten::_local_scalar_dense: .item(), bool(tensor), float(tensor))."""
    import torch
    from torch.profiler import ProfilerActivity, profile, schedule
    from transformers import TrainerCallback

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if _cuda() else [])

    def write(prof):
        averages = prof.key_averages()
        key = "self_cuda_time_total" if _cuda() else "self_cpu_time_total"
        try:
            shown = averages.table(sort_by=key, row_limit=40)
        except (AttributeError, KeyError, RuntimeError):
            key = "self_device_time_total" if _cuda() else key
            shown = averages.table(sort_by=key, row_limit=40)
        counts = {e.key: e.count for e in averages}
        reads = counts.get("aten::_local_scalar_dense", 0)
        waits = ("cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize")
        syncs = sum(counts.get(k, 0) for k in waits)
        head = (
            f"{active} optimizer steps profiled after {wait}; host reads of device values "
            f"(aten::_local_scalar_dense) per step: {reads / active:g}; CUDA synchronize calls per step: "
            f"{syncs / active:g}; torch {torch.__version__}\n\n"
        )
        Path(path).write_text(head + shown + "\n", encoding="utf-8")
        Path(path).with_suffix(".json").write_text(
            json.dumps({"reads_per_step": reads / active, "syncs_per_step": syncs / active}), encoding="utf-8"
        )

    class Profiled(TrainerCallback):
        def __init__(self):
            self.prof = profile(activities=activities, on_trace_ready=write,
                                schedule=schedule(wait=wait, warmup=2, active=active, repeat=1))  # fmt: skip

        def on_train_begin(self, args, state, control, **kwargs):
            self.prof.start()

        def on_step_end(self, args, state, control, **kwargs):
            self.prof.step()

        def on_train_end(self, args, state, control, **kwargs):
            self.prof.stop()

    return Profiled()


def plain_train(model_dir: str, train_tsv: str, n: str, work: str, profile_to: str = "") -> dict:
    """The Trainer as the transformers examples use it: datasets.map tokenisation,
    DataCollatorWithPadding(pad_to_multiple_of=8), bf16 where the GPU has it; `profile_to`: a
    short profiled run (30 steps) instead of the timed one."""
    from datasets import Dataset
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
    )

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = _rows(train_tsv, int(n))
    data = Dataset.from_dict({"text": [r["text"] for r in rows], "label": [int(r["label"]) for r in rows]})
    data = data.map(lambda b: tokenizer(b["text"], truncation=True, max_length=MAX_LENGTH), batched=True,
                    remove_columns=["text"])  # fmt: skip
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2)
    args = TrainingArguments(
        output_dir=work, per_device_train_batch_size=BATCH, num_train_epochs=1, learning_rate=LEARNING_RATE,
        bf16=_half() is not None, report_to="none", save_strategy="no", logging_steps=20, disable_tqdm=True,
        use_cpu=not _cuda(), seed=42, max_steps=30 if profile_to else -1,
    )  # fmt: skip
    trainer = Trainer(model=model, args=args, train_dataset=data,
                      data_collator=DataCollatorWithPadding(tokenizer, pad_to_multiple_of=8),
                      callbacks=[profiler_callback(profile_to)] if profile_to else None)  # fmt: skip
    result = trainer.train()
    return {"train_samples_per_second": result.metrics["train_samples_per_second"], "bf16": _half() is not None}


def bare_train(model_dir: str, train_tsv: str, n: str) -> dict:
    """A PyTorch loop over batches tokenised and padded beforehand (to a multiple of 8), autocast
    bf16, fused AdamW: a ceiling, timed after 10 warm-up steps."""
    import random

    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    device = "cuda" if _cuda() else "cpu"
    rows = _rows(train_tsv, int(n))
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    encoded = tokenizer([r["text"] for r in rows], truncation=True, max_length=MAX_LENGTH)["input_ids"]
    order = list(range(len(rows)))
    random.Random(42).shuffle(order)
    batches = []
    for start in range(0, len(order), BATCH):
        members = order[start : start + BATCH]
        width = -(-max(len(encoded[j]) for j in members) // 8) * 8
        ids = torch.zeros(len(members), width, dtype=torch.long)
        mask = torch.zeros_like(ids)
        for k, j in enumerate(members):
            ids[k, : len(encoded[j])] = torch.tensor(encoded[j])
            mask[k, : len(encoded[j])] = 1
        batches.append((ids, mask, torch.tensor([int(rows[j]["label"]) for j in members])))
    model = AutoModelForSequenceClassification.from_pretrained(model_dir, num_labels=2).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, fused=device == "cuda")
    half = _half()

    def step(batch):
        ids, mask, labels = (t.to(device, non_blocking=True) for t in batch)
        with torch.autocast(device, dtype=half or torch.float32, enabled=half is not None):
            loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for batch in batches[:10]:
        step(batch)
    _sync()
    started = time.perf_counter()
    for batch in batches:
        step(batch)
    _sync()
    return {"train_samples_per_second": round(len(rows) / (time.perf_counter() - started), 1)}


def pipeline_predict(bundle: str, texts_file: str) -> dict:
    """transformers' pipeline(batch_size=64) over the texts, in process (its whole process is
    timed by the caller)."""
    from transformers import pipeline

    texts = _texts(texts_file)
    pipe = pipeline("text-classification", model=bundle, device=0 if _cuda() else -1)
    started = time.perf_counter()
    pipe(texts, batch_size=64, truncation=True)
    return {"texts_per_second": round(len(texts) / (time.perf_counter() - started), 1)}


def bare_predict(bundle: str, texts_file: str) -> dict:
    """bf16 weights (on a GPU), texts sorted by length in batches of 256, tokenised per batch."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    device = "cuda" if _cuda() else "cpu"
    texts = _texts(texts_file)
    tokenizer = AutoTokenizer.from_pretrained(bundle)
    model = AutoModelForSequenceClassification.from_pretrained(bundle).to(device).eval()
    if _half() is not None:
        model = model.to(_half())
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))

    def run():
        labels = [None] * len(texts)
        with torch.inference_mode():
            for start in range(0, len(order), 256):
                members = order[start : start + 256]
                batch = tokenizer([texts[j] for j in members], truncation=True, max_length=MAX_LENGTH, padding=True,
                                  pad_to_multiple_of=8, return_tensors="pt").to(device)  # fmt: skip
                for j, label in zip(members, model(**batch).logits.argmax(-1).tolist(), strict=True):
                    labels[j] = label

    return {"texts_per_second": _median_rate(len(texts), run)}


def st_encode(model_dir: str, texts_file: str, out: str) -> dict:
    """sentence-transformers' encode(batch_size=64, normalize_embeddings=True)."""
    import numpy as np
    from sentence_transformers import SentenceTransformer

    texts = _texts(texts_file)
    model = SentenceTransformer(model_dir)
    started = time.perf_counter()
    vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
    rate = round(len(texts) / (time.perf_counter() - started), 1)
    np.save(out, vectors)
    return {"texts_per_second": rate}


def bertkit_predict(bundle: str, texts_file: str, distinct_file: str) -> dict:
    """bertkit's predict loop in process (`prediction.aligned`: tokenisation, batches, scores),
    median of 3, at the default precision; and on the distinct texts, the labels and scores of the
    default precision against fp32's."""
    from bertkit.prediction import aligned
    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle
    from bertkit.tasks.contract.options import PredictOptions

    bundle_ = open_bundle(bundle)
    task = get_task(bundle_.task)
    tokenizer = bundle_.load_tokenizer()
    options = PredictOptions(text_column="text")

    def results(model, texts):
        return list(aligned(task, model, tokenizer, bundle_.info, [{"text": t} for t in texts], options))

    model = bundle_.load_model(task.auto_model)
    precision = str(next(model.parameters()).dtype).removeprefix("torch.")
    texts = _texts(texts_file)
    rate = _median_rate(len(texts), lambda: results(model, texts))
    distinct = _texts(distinct_file)
    fast = results(model, distinct)
    full = results(bundle_.load_model(task.auto_model, precision="fp32"), distinct)
    same = sum(a["label"] == b["label"] for a, b in zip(fast, full, strict=True))
    diff = max(abs(a["scores"][k] - b["scores"][k]) for a, b in zip(fast, full, strict=True) for k in a["scores"])
    return {"texts_per_second": rate, "precision": precision, "labels_equal_fp32": round(same / len(distinct), 5),
            "max_score_difference": diff}  # fmt: skip


def bertkit_embed(model_dir: str, texts_file: str, distinct_file: str) -> dict:
    """bertkit's encoder in process, median of 3, at the default precision; the cosine of its
    vectors with fp32's on the distinct texts."""
    import numpy as np

    from bertkit.tasks.embed.encoder import load_encoder

    encoder = load_encoder(model_dir)
    texts = _texts(texts_file)
    rate = _median_rate(len(texts), lambda: encoder.encode(texts, 64))
    distinct = _texts(distinct_file)
    fast, full = encoder.encode(distinct), load_encoder(model_dir, precision="fp32").encode(distinct)
    cosine = (fast * full).sum(1) / (np.linalg.norm(fast, axis=1) * np.linalg.norm(full, axis=1))
    precision = str(next(encoder.model.parameters()).dtype).removeprefix("torch.")
    return {"texts_per_second": rate, "precision": precision, "min_cosine_fp32": float(cosine.min())}


def bertkit_profile(config: str, out_dir: str, profile_to: str) -> dict:
    """`bertkit train` in process, 30 steps, with the profiler callback."""
    from bertkit.config import load_config
    from bertkit.training import train

    cfg = load_config(config, [f"output_dir={out_dir}", "train.max_steps=30"])
    train(cfg, overwrite=True, callbacks=[profiler_callback(profile_to)], progress=False)
    return {}


RECIPES = {
    "plain-train": plain_train,
    "bare-train": bare_train,
    "pipeline": pipeline_predict,
    "bare-predict": bare_predict,
    "st-encode": st_encode,
    "bertkit-predict": bertkit_predict,
    "bertkit-embed": bertkit_embed,
    "bertkit-profile": bertkit_profile,
}

if __name__ == "__main__":
    print("RESULT " + json.dumps(RECIPES[sys.argv[1]](*sys.argv[2:])), flush=True)
