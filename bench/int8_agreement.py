"""int8 that agrees with the model it came from: static int8 variants of one classifier's ONNX
graph, measured side by side on the same texts in one run.

The classifier: the packaged MiniLM fine-tuned here on --train-samples SST-2 training examples
(default 600; outputs/bench-int8-classify-N), one epoch at 1e-4, max length 128 (or --model
BUNDLE, such a bundle again). The check data is SST-2 dev
(872 sentences, the bundle's validation file, which `bertkit export` calibrates and checks on); the
second held-out set is --held-out SST-2 training sentences the model never saw (default 3,000,
seeded).

Every variant is onnxruntime's static quantisation (QDQ): int8 weights per output channel, uint8
activations with fixed scales, the attention's two activation MatMuls in fp32:

  minmax-200            ranges min..max over 200 calibration rows (what `bertkit export` did before)
  minmax-1000           the same over 1,000 rows
  percentile            99.999th-percentile ranges (onnxruntime's), 200 rows (never padding: rows are
                        unpadded); onnxruntime's histograms need rows of one length, so it fails (said)
  entropy               KL-divergence ranges, 200 rows: likewise
  residual-fp32         minmax-200, the residual projections in fp32 (attention out and feed-forward out)
  residual-1000         the same, 1,000 rows
  ffn-out-fp32          minmax-200, the feed-forward output projections alone in fp32
  attn-out-fp32         minmax-200, the attention output projections alone in fp32
  head-fp32             minmax-200, the head (pooler, classifier) in fp32
  qkv-only              minmax-200, only query, key and value in int8
  smooth-all            SmoothQuant (exporting/smoothing.py, alpha 0.5) on every encoder projection
  smooth-residual-fp32  SmoothQuant on query/key/value and feed-forward in; residual projections fp32
  smooth-ffn-out-fp32   SmoothQuant on all but the feed-forward output, which stays fp32 (the default)

For each: labels equal to fp32's and accuracy on both sets, and texts/s of the graph in process
(bertkit's classify predict, batches of 32, --threads threads). Then whole `bertkit predict`
processes on --texts SST-2 sentences, --repeats rounds, each round running the PyTorch fp32
bundle, its ONNX fp32 graph, `bertkit export --quantize int8` of it (the export's default,
whatever it is now) and the minmax-200, smooth-ffn-out-fp32 and default+ffn-in-fp32 graphs where
this run or an earlier one made them, in turn; medians.

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
VARIANTS = {  # rows: calibration rows; keep: roles left fp32; smooth: roles smoothed (exporting/graphs.py)
    "minmax-200": {"rows": 200, "method": "minmax", "keep": "", "smooth": ""},
    "minmax-1000": {"rows": 1000, "method": "minmax", "keep": "", "smooth": ""},
    "percentile": {"rows": 200, "method": "percentile", "keep": "", "smooth": ""},
    "entropy": {"rows": 200, "method": "entropy", "keep": "", "smooth": ""},
    "residual-fp32": {"rows": 200, "method": "minmax", "keep": "attention-out+ffn-out", "smooth": ""},
    "residual-1000": {"rows": 1000, "method": "minmax", "keep": "attention-out+ffn-out", "smooth": ""},
    "ffn-out-fp32": {"rows": 200, "method": "minmax", "keep": "ffn-out", "smooth": ""},
    "attn-out-fp32": {"rows": 200, "method": "minmax", "keep": "attention-out", "smooth": ""},
    "head-fp32": {"rows": 200, "method": "minmax", "keep": "head", "smooth": ""},
    "qkv-only": {"rows": 200, "method": "minmax", "keep": "attention-out+ffn-out+ffn-in+head", "smooth": ""},
    "smooth-all": {"rows": 200, "method": "minmax", "keep": "", "smooth": "attention-in+ffn-in+attention-out+ffn-out"},
    "smooth-residual-fp32": {"rows": 200, "method": "minmax", "keep": "attention-out+ffn-out",
                             "smooth": "attention-in+ffn-in"},
    "smooth-ffn-out-fp32": {"rows": 200, "method": "minmax", "keep": "ffn-out",
                            "smooth": "attention-in+ffn-in+attention-out"},
    # ablations of the default: one more role left in fp32
    "default+qkv-fp32": {"rows": 200, "method": "minmax", "keep": "ffn-out+attention-in",
                         "smooth": "ffn-in+attention-out"},
    "default+ffn-in-fp32": {"rows": 200, "method": "minmax", "keep": "ffn-out+ffn-in",
                            "smooth": "attention-in+attention-out"},
    "default+head-fp32": {"rows": 200, "method": "minmax", "keep": "ffn-out+head",
                          "smooth": "attention-in+ffn-in+attention-out"},
    "default-1000": {"rows": 1000, "method": "minmax", "keep": "ffn-out",
                     "smooth": "attention-in+ffn-in+attention-out"},
}  # fmt: skip


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
    train = OUT / f"train-{samples}.tsv"
    train.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in chosen), encoding="utf-8")
    config = OUT / "run.yaml"
    config.write_text(
        f"task: classify\nmodel:\n  name: {minilm_path()}\n  max_length: 128\n"
        f"data:\n  train: {{path: {train}}}\n  validation: {{path: {DATA / 'en/sst2/dev.tsv'}}}\n"
        "train:\n  epochs: 1\n  batch_size: 16\n  learning_rate: 1.0e-4\nclassify:\n  strategy: finetune\n"
    )
    train_bundle("classify", str(config), f"int8-classify-{samples}", [])
    return ROOT / "outputs" / f"bench-int8-classify-{samples}", {t for t, _ in chosen}


def held_out(n: int, seen: set[str]) -> list[tuple[str, int]]:
    rows = [r for r in sst2_rows(DATA / "en/sst2/train.tsv") if r[0] not in seen and r[0].strip()]
    return random.Random(SEED + 1).sample(rows, n)


def predictions(model, tokenizer, info, texts: list[str]) -> tuple[list[str], float]:
    from bertkit.tasks import get_task
    from bertkit.tasks.contract.options import PredictOptions

    task = get_task("classify")
    records = [{"text": t} for t in texts]
    started = time.perf_counter()
    options = PredictOptions(batch_size=32)
    found = [r["label"] for r in task.prediction.predict(model, tokenizer, info, records, options)]
    return found, len(texts) / (time.perf_counter() - started)


def whole_process(bundle: Path, texts_file: Path, threads: int) -> float:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "HF_HUB_OFFLINE": "1"}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bertkit", "predict", "-m", str(bundle), "-i", str(texts_file), "-o",
         str(OUT / "predicted.jsonl")],
        check=True, env=env, cwd=ROOT, capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


EMBED_VARIANTS = {  # an embed bundle of the packaged MiniLM: roles kept fp32 / smoothed, 200 rows
    "all-int8": {"keep": "", "smooth": ""},
    "residual-fp32": {"keep": "attention-out+ffn-out", "smooth": ""},
    "smooth-residual-fp32": {"keep": "attention-out+ffn-out", "smooth": "attention-in+ffn-in"},
    "smooth-ffn-out-fp32": {"keep": "ffn-out", "smooth": "attention-in+ffn-in+attention-out"},
}


def embed_agreement(count: int) -> list[dict]:
    """MiniLM as an embed bundle (mean pooling, normalised): the cosine of each int8 variant's
    vectors with fp32's over `count` texts, half SST-2 dev sentences and half IMDb test reviews
    (seeded), calibrated on 200 pairs of other SST-2 dev sentences."""
    import gzip
    import json

    import numpy as np

    from bertkit.core.onnx_runtime import OnnxModel
    from bertkit.exporting.calibration import activation_matmuls, quantize_static, record_inputs
    from bertkit.exporting.graphs import projection_roles
    from bertkit.exporting.onnx import export_bundle
    from bertkit.exporting.smoothing import smooth_graph
    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle
    from bertkit.tasks.embed.encoder import load_encoder
    from bertkit.tasks.embed.export import AGREEING_COSINE

    source = OUT / "minilm-embed"
    shutil.rmtree(source, ignore_errors=True)
    shutil.copytree(minilm_path(), source)
    (source / "bertkit.json").write_text('{"task": "embed", "pooling": "mean", "normalize": true, "max_length": 256}')
    sentences = [t for t, _ in sst2_rows(require(DATA / "en/sst2/dev.tsv"))]
    random.Random(SEED).shuffle(sentences)
    with gzip.open(require(DATA / "en/imdb/test.jsonl.gz"), "rt", encoding="utf-8") as handle:
        reviews = [json.loads(line)["text"] for line in handle]
    texts = sentences[: count // 2] + random.Random(SEED).sample(reviews, count - count // 2)
    calibration = OUT / "embed-calibration.jsonl"  # 200 pairs of other SST-2 sentences (text, text_pair)
    others = sentences[count // 2 : count // 2 + 400]
    calibration.write_text(
        "".join(json.dumps({"text": a, "text_pair": b}) + "\n" for a, b in zip(others[::2], others[1::2], strict=True)),
        encoding="utf-8",
    )
    fp32_dir, _ = export_bundle(
        str(source), output=str(OUT / "embed-fp32"), overwrite=True, check_data=str(calibration)
    )
    fp32_file = fp32_dir / "model.onnx"
    bundle = open_bundle(str(fp32_dir))
    rows = record_inputs(get_task("embed"), OnnxModel(fp32_dir), bundle.load_tokenizer(), bundle.info, calibration)
    reference = load_encoder(str(fp32_dir)).encode(texts)
    roles = projection_roles(fp32_file)
    results = []
    for name, spec in EMBED_VARIANTS.items():
        target = OUT / f"embed-{name}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(fp32_dir, target)
        keep = activation_matmuls(fp32_file) + [n for r in filter(None, spec["keep"].split("+")) for n in roles[r]]
        smoothed = target / "smoothed.onnx"
        smooth_graph(fp32_file, smoothed, rows, [n for r in filter(None, spec["smooth"].split("+")) for n in roles[r]])
        quantize_static(smoothed, target / "model.onnx", rows, keep)
        smoothed.unlink()
        encoder = load_encoder(str(target))
        started = time.perf_counter()
        vectors = encoder.encode(texts)
        seconds = time.perf_counter() - started
        cosine = (vectors * reference).sum(1)  # unit rows
        agree = float(np.mean(cosine >= AGREEING_COSINE))
        results.append({"variant": name, "cos min": float(cosine.min()), "cos mean": float(cosine.mean()),
                        "agree": agree, "texts/s": len(texts) / seconds})  # fmt: skip
        print(table(results, list(results[0])), flush=True)
    return results


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
    parser.add_argument("--embed-texts", type=int, default=0, help="also the embed variants on this many texts")
    parser.add_argument("--embed-only", action="store_true")
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if args.embed_only:
        save("int8_agreement_embed", {"embed": embed_agreement(args.embed_texts or 300), "args": vars(args)})
        return

    if args.embed_only:
        save("int8_agreement_embed", {"embed": embed_agreement(args.embed_texts or 300), "args": vars(args)})
        return
    from bertkit.core.onnx_runtime import OnnxModel
    from bertkit.exporting.calibration import activation_matmuls, quantize_static, record_inputs
    from bertkit.exporting.graphs import projection_roles
    from bertkit.exporting.onnx import export_bundle
    from bertkit.exporting.smoothing import smooth_graph
    from bertkit.tasks import get_task
    from bertkit.tasks.bundle import open_bundle

    if args.model:  # the sentences it was trained on, when this bench trained it, stay out of the held-out set
        bundle_dir = Path(args.model).resolve()
        trained_on = OUT / f"train-{bundle_dir.name.rsplit('-', 1)[-1]}.tsv"
        seen = {r[0] for r in sst2_rows(trained_on)} if bundle_dir.parent == ROOT / "outputs" else set()
    else:
        bundle_dir, seen = classifier(args.train_samples)
    dev = sst2_rows(require(DATA / "en/sst2/dev.tsv"))
    other = held_out(args.held_out, seen)
    sets = {"sst2-dev": dev, "held-out": other}

    work = OUT / bundle_dir.name  # this model's graphs
    fp32_dir, _ = export_bundle(str(bundle_dir), output=str(work / "fp32"), overwrite=True, min_agreement=0)
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
    roles = projection_roles(fp32_file)
    print({role: len(names) for role, names in roles.items()}, flush=True)
    attention_matmuls = activation_matmuls(fp32_file)
    for name in args.variants.split(","):
        spec = VARIANTS[name]
        count = spec["rows"]
        if count not in rows_by_count:
            rows_by_count[count] = record_inputs(task, fp32, tokenizer, info, calibration, "tsv", sample=count)
        target = work / f"int8-{name}"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(fp32_dir, target)
        keep = attention_matmuls + [n for role in filter(None, spec["keep"].split("+")) for n in roles[role]]
        smooth = [n for role in filter(None, spec["smooth"].split("+")) for n in roles[role]]
        started = time.perf_counter()
        smoothed = target / "smoothed.onnx"
        smooth_graph(fp32_file, smoothed, rows_by_count[count], smooth)
        quantize_static(smoothed, target / "model.onnx", rows_by_count[count], keep, spec["method"])
        smoothed.unlink()
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
        int8_dir, record = export_bundle(str(bundle_dir), quantize="int8", output=str(work / "export-int8"),
                                         overwrite=True, min_agreement=0)  # fmt: skip
        bundles = {"torch_fp32": bundle_dir, "onnx_fp32": work / "fp32", "export_int8": int8_dir}
        for variant in ("minmax-200", "smooth-ffn-out-fp32", "default+ffn-in-fp32"):  # made above or before
            if (work / f"int8-{variant}").is_dir():
                bundles[f"int8_{variant}"] = work / f"int8-{variant}"
        rounds: dict[str, list[float]] = {name: [] for name in bundles}
        for _ in range(args.repeats):
            for name, path in bundles.items():
                rounds[name].append(whole_process(path, texts_file, args.threads))
        for name, seconds in rounds.items():
            processes[f"{name}_s"] = sorted(seconds)[len(seconds) // 2]
            processes[f"{name}_rounds"] = [round(x, 2) for x in seconds]
        processes["speed_up"] = processes["torch_fp32_s"] / processes["export_int8_s"]
        processes["load_average"] = os.getloadavg()[0]
        processes["export_record"] = {k: record[k] for k in ("int8", "check", "seconds")}
        print(processes)
    print(table(results, list(results[-1])))
    embed = embed_agreement(args.embed_texts) if args.embed_texts else None
    save("int8_agreement", {"results": results, "processes": processes, "embed": embed, "args": vars(args)})


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).parent))
    main()
