"""The int8 export (static quantisation) against the PyTorch bundle it comes from, in one run:

A. Whole `bertkit predict` processes over --texts short SST-2 training sentences, PyTorch bundle,
   ONNX fp32 and ONNX int8, interleaved round by round, median of --repeats.
B. SST-2 dev accuracy of the three (`bertkit evaluate`, all 872 sentences).
C. Batch independence: each of --alone texts predicted alone against its line among all
   --texts, byte for byte, for the three.

The bundle: --model (a classify bundle trained on SST-2, e.g. bench/onnx_speed.py's
outputs/bench-onnx-classify). It is exported here (fp32 and int8, calibrated on its own
validation file).

Usage: python bench/int8_static.py --model DIR [--texts 1000] [--repeats 3] [--alone 10]
Writes bench/results/int8_static.json and prints tables.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from classify_speed import sst2
from common import DATA, ROOT, require, save, table


def bertkit(*args: str) -> float:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "bertkit", *args], env=env, check=True, capture_output=True)
    return time.perf_counter() - started


def main(argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--alone", type=int, default=10)
    args = parser.parse_args(argv)
    model = Path(args.model).resolve()
    work = Path(tempfile.mkdtemp(prefix="int8-static-"))
    bundles = {"PyTorch fp32": model, "ONNX fp32": work / "fp32", "ONNX int8": work / "int8"}
    bertkit("export", "-m", str(model), "-o", str(bundles["ONNX fp32"]))
    bertkit("export", "-m", str(model), "-o", str(bundles["ONNX int8"]), "--quantize", "int8")
    texts = [t.strip() or "x" for t in sst2(require(DATA / "en/sst2/train.tsv"), args.texts)[0]]
    source = work / "texts.txt"
    source.write_text("\n".join(texts) + "\n", encoding="utf-8")
    times: dict[str, list[float]] = {name: [] for name in bundles}
    for _ in range(args.repeats):
        for name, bundle in bundles.items():
            times[name].append(bertkit("predict", "-m", str(bundle), "-i", str(source), "-o", str(work / "p.jsonl")))
    rows = []
    for name, bundle in bundles.items():
        together = (work / f"{name}.jsonl").as_posix()
        bertkit("predict", "-m", str(bundle), "-i", str(source), "-o", together)
        lines = Path(together).read_text(encoding="utf-8").splitlines()
        differ = 0
        for i in range(0, len(texts), max(1, len(texts) // args.alone)):
            one = work / "one.txt"
            one.write_text(texts[i] + "\n", encoding="utf-8")
            bertkit("predict", "-m", str(bundle), "-i", str(one), "-o", str(work / "one.jsonl"))
            differ += (work / "one.jsonl").read_text(encoding="utf-8").splitlines()[0] != lines[i]
        scored = work / f"eval-{len(rows)}"
        bertkit("evaluate", "-m", str(bundle), "-d", str(DATA / "en/sst2/dev.tsv"), "-o", str(scored))
        accuracy = json.loads((scored / "metrics.json").read_text())["accuracy"]
        median = statistics.median(times[name])
        rows.append(
            {
                "bundle": name,
                "seconds": median,
                "runs": times[name],
                "dev_accuracy": accuracy,
                "alone_lines_differing": differ,
            }
        )
    base = rows[0]["seconds"]
    for row in rows:
        row["vs_pytorch"] = base / row["seconds"]
    print(table(rows, ["bundle", "seconds", "vs_pytorch", "dev_accuracy", "alone_lines_differing"]))
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    save("int8_static", {"texts": args.texts, "rows": rows, "load_average": os.getloadavg()[0]})


if __name__ == "__main__":
    main(sys.argv[1:])
