"""int8 that agrees with the model it came from: static int8 variants of one classifier's ONNX
graph, measured side by side on the same texts in one run.

The classifier: the packaged MiniLM fine-tuned here on --train-samples SST-2 training examples
(default 600), one epoch at 1e-4, max length 128 (or --model BUNDLE). The check data is SST-2 dev
(872 sentences, the bundle's validation file, which `bertkit export` calibrates and checks on); the
second held-out set is --held-out SST-2 training sentences the model never saw (default 3,000,
seeded).

Every variant is onnxruntime's static quantisation (QDQ): int8 weights per output channel, uint8
activations with fixed scales, the attention's two activation MatMuls in fp32:

  minmax-200     ranges min..max over 200 calibration rows (what `bertkit export` did before)
  minmax-1000    the same over 1,000 rows
  percentile     99.999th-percentile ranges (onnxruntime's), 200 rows (never padding: rows are unpadded);
                 onnxruntime's histograms need rows of one length, so it fails on unpadded rows (said)
  entropy        KL-divergence ranges, 200 rows: likewise
  residual-fp32  minmax-200, the residual projections in fp32 (attention output and feed-forward output)
  ffn-out-fp32   minmax-200, the feed-forward output projections alone in fp32
  attn-out-fp32  minmax-200, the attention output projections alone in fp32

For each: labels equal to fp32's and accuracy on both sets, and texts/s of the graph in process
(bertkit's classify predict, batches of 32, --threads threads). Then whole `bertkit predict`
processes on --texts SST-2 sentences: the PyTorch fp32 bundle against `bertkit export
--quantize int8` of it (the export's default, whatever it is now), median of --repeats.

Usage: python bench/int8_agreement.py [--model DIR] [--train-samples 600] [--held-out 3000]
       [--texts 2000] [--repeats 3] [--threads 1] [--variants a,b,...]
Writes bench/results/int8_agreement.json and prints a table.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import DATA, ROOT, minilm_path, require, save, table

OUT = ROOT / "outputs" / "bench-int8"
SEED = 7
VARIANTS = {
    "minmax-200": {"rows": 200, "method": "minmax", "keep": ""},
    "minmax-1000": {"rows": 1000, "method": "minmax", "keep": ""},
    "percentile": {"rows": 200, "method": "percentile", "keep": ""},
    "entropy": {"rows": 200, "method": "entropy", "keep": ""},
    "residual-fp32": {"rows": 200, "method": "minmax", "keep": "residual"},
    "ffn-out-fp32": {"rows": 200, "method": "minmax", "keep": "ffn"},
    "attn-out-fp32": {"rows": 200, "method": "minmax", "keep": "attention"},
}


def sst2_rows(path: Path) -> list[tuple[str, int]]:
    with open(path, encoding="utf-8") as handle:
        return [(r["text"], int(r["label"])) for r in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)]


def classifier(samples: int) -> tuple[Path, set[str]]:
    """MiniLM fine-tuned on `samples` seeded SST-2 training examples; returns the bundle and the
    training texts (the held-out set leaves them out)."""
    from common import train_bundle

    OUT.mkdir(parents=True, exist_ok=True)
    rows = sst2_rows(require(DATA / "en/sst2/train.tsv"))
    chosen = random.Random(SEED).sample(rows, samples)
    train = OUT / "train.tsv"
    train.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in chosen), encoding="utf-8")
    config = OUT / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 128\n"
        f"data:\n  train: {{path: {train}}}\n  validation: {{path: {DATA / 'en/sst2/dev.tsv'}}}\n"
        "train:\n  epochs: 1\n  batch_size: 16\n  learning_rate: 1.0e-4\nclassify:\n  strategy: finetune\n"
    )
    train_bundle("classify", str(config), "int8-classify", [])
    return ROOT / "outputs" / "bench-int8-classify", {t for t, _ in chosen}


def held_out(n: int, seen: set[str]) -> list[tuple[str, int]]:
    rows = [r for r in sst2_rows(DATA / "en/sst2/train.tsv") if r[0] not in seen and r[0].strip()]
    return random.Random(SEED + 1).sample(rows, n)


def split_residuals(graph_file: Path, names: list[str]) -> dict[str, list[str]]:
    """The residual projections (graphs.residual_projections) by what feeds them: the feed-forward
    output's input is the GELU's product, the attention output's the heads put back together."""
    import onnx

    graph = onnx.load(str(graph_file), load_external_data=False).graph
    producer = {out: node for node in graph.node for out in node.output}
    wanted = set(names)
    ffn, attention = [], []
    for node in graph.node:
        if node.name in wanted:
            made_by = producer.get(node.input[0])
            (ffn if made_by is not None and made_by.op_type in ("Mul", "Erf", "Gelu") else attention).append(node.name)
    return {"ffn": ffn, "attention": attention, "residual": [*ffn, *attention]}


def predictions(model, tokenizer, info, texts: list[str]) -> tuple[list[str], float]:
    from bertkit.tasks import get_task
    from bertkit.tasks.contract.options import PredictOptions

    task = get_task("classify")
    records = [{"text": t} for t in texts]
    started = time.perf_counter()
    options = PredictOptions(batch_size=32)
    found = [r["label"] for r in task.prediction.predict(model, tokenizer, info, records, options)]
    return found, len(texts) / (time.perf_counter() - started)


def whole_process(bundle: Path, texts_file: Path, repeats: int, threads: int) -> float:
    times = []
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    for _ in range(repeats):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "bertkit", "predict", "-m", str(bundle), "-i", str(texts_file), "-o",
             str(OUT / "predicted.jsonl")],
            check=True, env=env, cwd=ROOT, capture_output=True,
        )  # fmt: skip
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model")
    parser.add_argument("--train-samples", type=int, default=600)
    parser.add_argument("--held-out", type=int, default=3000)
    parser.add_argument("--texts", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--no-processes", action="store_true", help="skip the whole-process timing")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)

    from bertkit.core.onnx_runtime import OnnxModel
    from bertkit.exporting.calibration import activation_matmuls, quantize_static, record_inputs
    from bertkit.exporting.graphs import residual_projections
    from bertkit.exporting.onnx import export_bundle
    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle

    if args.model:  # the sentences it was trained on, when this bench trained it, stay out of the held-out set
        trained_on = OUT / "train.tsv"
        seen = (
            {r[0] for r in sst2_rows(trained_on)}
            if Path(args.model).resolve() == (ROOT / "outputs" / "bench-int8-classify").resolve()
            and trained_on.is_file()
            else set()
        )
        bundle_dir = Path(args.model)
    else:
        bundle_dir, seen = classifier(args.train_samples)
    dev = sst2_rows(require(DATA / "en/sst2/dev.tsv"))
    other = held_out(args.held_out, seen)
    sets = {"sst2-dev": dev, "held-out": other}

    fp32_dir, _ = export_bundle(str(bundle_dir), output=str(OUT / "fp32"), overwrite=True, min_agreement=0)
    fp32_file = fp32_dir / "model.onnx"
    bundle = open_bundle(str(fp32_dir))
    tokenizer = bundle.load_tokenizer()
    info = bundle.info
    fp32 = OnnxModel(fp32_dir)
    reference = {}
    results = []
    for name, rows in sets.items():
        labels, speed = predictions(fp32, tokenizer, info, [t for t, _ in rows])
        reference[name] = labels
        accuracy = sum(int(label) == y for label, (_, y) in zip(labels, rows, strict=True)) / len(rows)
        results.append({"variant": "fp32", "set": name, "agree": 1.0, "accuracy": accuracy, "texts/s": speed})
    task = get_task("classify")
    calibration = DATA / "en/sst2/dev.tsv"
    rows_by_count = {}
    residuals = split_residuals(fp32_file, residual_projections(fp32_file))
    attention_matmuls = activation_matmuls(fp32_file)
    for name in args.variants.split(","):
        spec = VARIANTS[name]
        count = spec["rows"]
        if count not in rows_by_count:
            rows_by_count[count] = record_inputs(task, fp32, tokenizer, info, calibration, "tsv", sample=count)
        target = OUT / f"int8-{name}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(fp32_dir, target)
        keep = attention_matmuls + (residuals[spec["keep"]] if spec["keep"] else [])
        started = time.perf_counter()
        quantize_static(fp32_file, target / "model.onnx", rows_by_count[count], keep, spec["method"])
        seconds = time.perf_counter() - started
        int8 = OnnxModel(target)
        for set_name, rows in sets.items():
            labels, speed = predictions(int8, tokenizer, info, [t for t, _ in rows])
            agree = sum(a == b for a, b in zip(labels, reference[set_name], strict=True)) / len(rows)
            accuracy = sum(int(label) == y for label, (_, y) in zip(labels, rows, strict=True)) / len(rows)
            results.append({"variant": name, "set": set_name, "agree": agree, "accuracy": accuracy, "texts/s": speed,
                            "fp32 kept": len(keep), "quantise s": round(seconds, 1)})  # fmt: skip
        print(table([r for r in results if r["variant"] in ("fp32", name)], list(results[-1])), flush=True)
    processes = {}
    if not args.no_processes:
        texts_file = OUT / "texts.txt"
        pool = [t for t, _ in other] + [t for t, _ in dev]
        texts_file.write_text("\n".join(random.Random(SEED + 2).sample(pool, args.texts)) + "\n", encoding="utf-8")
        int8_dir, record = export_bundle(str(bundle_dir), quantize="int8", output=str(OUT / "export-int8"),
                                         overwrite=True, min_agreement=0)  # fmt: skip
        processes["torch_fp32_s"] = whole_process(bundle_dir, texts_file, args.repeats, args.threads)
        processes["export_int8_s"] = whole_process(int8_dir, texts_file, args.repeats, args.threads)
        processes["speed_up"] = processes["torch_fp32_s"] / processes["export_int8_s"]
        processes["export_check"] = record["check"]
        print(processes)
    print(table(results, list(results[-1])))
    save("int8_agreement", {"results": results, "processes": processes, "args": vars(args)})


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
