"""ONNX bundles against the PyTorch bundle they come from, measured in one run on the same texts.

A. Throughput (texts/s, median of --repeats) of bertkit's classify predict (length-sorted
   batches of 32, --threads threads) on --texts mixed SST-2 / IMDb texts, for: PyTorch fp32,
   PyTorch with torch.ao dynamic int8 Linear layers, ONNX fp32, ONNX fp32 after onnxruntime's
   transformer fusions, ONNX int8 (onnxruntime dynamic quantisation, what `bertkit export
   --quantize int8` writes) and int8 of the fused graph. Ratios are against PyTorch fp32.
B. SST-2 dev accuracy of each, and labels equal to PyTorch fp32's.
C. Sentence vectors of the packaged MiniLM as an embed bundle: cosine of ONNX fp32 and int8
   vectors with PyTorch's, and texts/s of the three.
D. Whole `bertkit predict` processes: one text (time to the first result, cold start) and
   --short short SST-2 texts, PyTorch bundle against the ONNX int8 bundle.

The classifier: --model BUNDLE, else the packaged MiniLM fine-tuned here on --train-samples SST-2
examples (default 2,000; 1 epoch at 1e-4, max length 128, validation on SST-2 dev: 800 examples at
5e-5 stayed at the majority class).

Usage: python bench/onnx_speed.py [--model DIR] [--texts 1000] [--short 3000] [--repeats 3]
Writes bench/results/onnx_speed.json and prints tables.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

from classify_speed import predict_texts, sst2
from common import DATA, ROOT, median_time, minilm_path, require, save, table

OUT = ROOT / "outputs" / "bench-onnx"


def classifier(samples: int) -> Path:
    from common import train_bundle

    OUT.mkdir(parents=True, exist_ok=True)
    config = OUT / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 128\n"
        f"data:\n  train: {{path: {DATA / 'en/sst2/train.tsv'}}}\n  validation: {{path: {DATA / 'en/sst2/dev.tsv'}}}\n"
        f"  max_train_samples: {samples}\ntrain:\n  epochs: 1\n  batch_size: 16\n  learning_rate: 1.0e-4\n"
    )
    train_bundle("classify", str(config), "onnx-classify", [])
    return ROOT / "outputs" / "bench-onnx-classify"


def export(bundle: Path, quantize: bool) -> Path:
    from bertkit.exporting.onnx import export_bundle

    target, record = export_bundle(str(bundle), quantize="int8" if quantize else None, overwrite=True)
    print(json.dumps(record["check"], indent=1))
    return target


def fused(source: Path, name: str, quantize: bool) -> Path:
    """A copy of the fp32 ONNX bundle after onnxruntime's BERT fusions (and int8 of it)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.transformers.optimizer import optimize_model

    from bertkit.core.onnx_runtime import read_config

    target = OUT / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(source, target)
    config = read_config(source)
    optimized = optimize_model(str(source / "model.onnx"), "bert", config.num_attention_heads, config.hidden_size)
    optimized.save_model_to_file(str(target / "model.onnx"))
    if quantize:
        import onnx

        quantize_dynamic(
            str(target / "model.onnx"),
            str(target / "q.onnx"),
            weight_type=QuantType.QInt8,
            extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},  # fused ops have no inferred types
        )
        (target / "q.onnx").replace(target / "model.onnx")
    return target


def throughput(models: dict, tokenizer, info, texts: list[str], repeats: int) -> tuple[list[dict], dict]:
    from bertkit.tasks import get_task
    from bertkit.tasks.contract.options import PredictOptions

    task = get_task("classify")
    records = [{"text": t} for t in texts]
    rows, labels = [], {}
    for name, model in models.items():
        found = []

        def run(model=model, found=found):
            found[:] = list(task.prediction.predict(model, tokenizer, info, records, PredictOptions(batch_size=32)))

        seconds = median_time(run, repeats)
        labels[name] = [r["label"] for r in found]
        rows.append({"method": name, "seconds": seconds, "texts_per_s": len(texts) / seconds})
    base = rows[0]["texts_per_s"]
    for row in rows:
        row["vs_pytorch"] = row["texts_per_s"] / base
    return rows, labels


def embed_cosines(texts: list[str], threads: int, repeats: int) -> dict:
    """MiniLM as an embed bundle (mean pooling, normalised, as sentence-transformers uses it): cosines
    with PyTorch's vectors, and texts/s of each runtime."""
    import numpy as np

    from bertkit.tasks.embed.encoder import load_encoder

    bundle = OUT / "minilm-embed"
    shutil.rmtree(bundle, ignore_errors=True)
    shutil.copytree(minilm_path(), bundle)
    (bundle / "bertkit.json").write_text(
        json.dumps({"task": "embed", "pooling": "mean", "normalize": True, "max_length": 256})
    )
    encoders = {"pytorch": load_encoder(str(bundle), runtime="torch")}
    for quantize in (False, True):
        encoders["int8" if quantize else "fp32"] = load_encoder(str(export(bundle, quantize)))
    vectors = {name: encoder.encode(texts) for name, encoder in encoders.items()}
    speed = {name: len(texts) / median_time(lambda e=e: e.encode(texts), repeats) for name, e in encoders.items()}
    out = {"texts_per_s": speed}
    for name in ("fp32", "int8"):
        cosine = (vectors[name] * vectors["pytorch"]).sum(1)  # unit rows
        out[name] = {"min": float(cosine.min()), "mean": float(cosine.mean())}
    cosine = (vectors["int8"] * vectors["fp32"]).sum(1)
    out["int8_vs_fp32"] = {"min": float(cosine.min()), "mean": float(np.mean(cosine))}
    return out


def process_times(bundles: dict, texts: list[str], name: str, repeats: int) -> dict:
    """Wall time of whole `bertkit predict` processes over `texts`, per bundle."""
    source = OUT / f"{name}.txt"
    source.write_text("\n".join(t.replace("\n", " ") for t in texts) + "\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    times = {}
    for label, bundle in bundles.items():
        command = [sys.executable, "-m", "bertkit", "predict", "-m", str(bundle), "-i", str(source)]
        command += ["-o", str(OUT / f"{name}-{label}.jsonl")]
        times[label] = median_time(
            lambda c=command: subprocess.run(c, env=env, check=True, capture_output=True), repeats
        )
    return times


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", help="a classify bundle (default: MiniLM fine-tuned here on SST-2)")
    parser.add_argument("--train-samples", type=int, default=2000)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--short", type=int, default=3000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    import warnings

    import torch

    warnings.filterwarnings("ignore", category=DeprecationWarning)  # torch.ao's, about its future
    warnings.filterwarnings("ignore", category=UserWarning)

    from bertkit.core.onnx_runtime import OnnxModel
    from bertkit.tasks.bundle import open_bundle

    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    bundle = Path(args.model) if args.model else classifier(args.train_samples)
    fp32_dir, int8_dir = export(bundle, False), export(bundle, True)
    source = open_bundle(str(bundle))
    tokenizer = source.load_tokenizer()
    pytorch = source.load_model("AutoModelForSequenceClassification", "cpu")
    models = {
        "PyTorch fp32": pytorch,
        "PyTorch int8 (torch.ao dynamic, Linear)": torch.ao.quantization.quantize_dynamic(
            source.load_model("AutoModelForSequenceClassification", "cpu"), {torch.nn.Linear}, dtype=torch.qint8
        ),
        "ONNX fp32": OnnxModel(fp32_dir, args.threads),
        "ONNX fp32 + ORT fusions": OnnxModel(fused(fp32_dir, "fused-fp32", False), args.threads),
        "ONNX int8 (bertkit export)": OnnxModel(int8_dir, args.threads),
        "ONNX int8 + ORT fusions": OnnxModel(fused(fp32_dir, "fused-int8", True), args.threads),
    }
    texts = predict_texts(args.texts)
    speed, _ = throughput(models, tokenizer, source.info, texts, args.repeats)
    print(table(speed, ["method", "seconds", "texts_per_s", "vs_pytorch"]))
    dev_texts, dev_labels = sst2(require(DATA / "en/sst2/dev.tsv"))
    _, dev_found = throughput(models, tokenizer, source.info, dev_texts, 1)
    accuracy = []
    for name, found in dev_found.items():
        right = sum(str(a) == str(b) for a, b in zip(found, dev_labels, strict=True)) / len(dev_labels)
        same = sum(a == b for a, b in zip(found, dev_found["PyTorch fp32"], strict=True)) / len(dev_labels)
        accuracy.append({"method": name, "sst2_dev_accuracy": right, "same_label_as_pytorch": same})
    print(table(accuracy, ["method", "sst2_dev_accuracy", "same_label_as_pytorch"]))
    cosines = embed_cosines(texts, args.threads, args.repeats)
    print(json.dumps(cosines, indent=1))
    pair = {"pytorch": bundle, "onnx int8": int8_dir, "onnx fp32": fp32_dir}
    first = process_times(pair, [dev_texts[0]], "one", args.repeats)
    short_texts, _ = sst2(require(DATA / "en/sst2/train.tsv"), args.short)
    whole = process_times(pair, short_texts, "short", args.repeats)
    processes = [
        {"run": f"predict, {what}", **{k: round(v, 2) for k, v in got.items()}}
        for what, got in (("one text (cold start)", first), (f"{args.short} short texts", whole))
    ]
    print(table(processes, ["run", *pair]))
    result = {
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "threads": args.threads,
        },
        "load_average_at_end": os.getloadavg(),
        "bundle": str(bundle),
        "texts": args.texts,
        "repeats": args.repeats,
        "throughput": speed,
        "accuracy": accuracy,
        "embed_cosine": cosines,
        "processes": processes,
        "seconds": round(time.perf_counter() - started, 1),
    }
    print(f"written to {save('onnx_speed', result)}")


if __name__ == "__main__":
    main(sys.argv[1:])
