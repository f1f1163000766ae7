"""bertkit against the plain Hugging Face ways and bare PyTorch loops on one CUDA GPU, in one run
(issue 32, items 1-3 and 5): training samples/s, predict and embed whole process and in process,
labels and vectors against fp32's, and torch.profiler summaries of bertkit's training step and the
plain Trainer's. Prints one table; writes gpu_speed.json, gpu_speed.txt, profile_bertkit.txt and
profile_plain.txt (with .json counts of host reads per step) and gpu_speed.log to --out.

Settings (the issue's): SST-2 sentences, max_length 64, batch 32, 1 epoch, lr 5e-5, bf16 where the
GPU has it, no evaluation; random-weight models of BERT-base's and MiniLM's shape with MiniLM's
vocabulary (speed does not depend on the weights); inference on --texts texts (SST-2 dev repeated),
labels and vectors compared with fp32's on the 872 distinct dev sentences. The peers are in
bench/gpu_peers.py. Training runs once per tool; in-process rates are medians of 3.

On the GPU machine (through the device tool, 15 minutes a session; this run takes about 7 on one
H100 by the issue's timings, --budget stops starting new steps after 450 s):

  1. here, in the repository's root (needs ../shared/data and pip's network):
       python bench/gpu_speed.py pack          # .gpu/: wheels, SST-2, MiniLM's config and tokenizer
  2. device run, carry [".gpu"], timeout_s 560, the command:
       python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade
       --target /tmp/site .gpu/whl/*.whl && export PYTHONPATH=/tmp/site:$PWD HF_HUB_OFFLINE=1
       PYTHONUNBUFFERED=1 && python3 bench/gpu_speed.py run --pack .gpu --out $OUT
     (one line; the machine has torch, transformers, accelerate, sentence-transformers, pandas,
     pyarrow, scikit-learn, matplotlib, typer, rich, PyYAML, regex; the wheels carry datasets,
     evaluate, pydantic and what they need that it lacks, at the versions installed here. `run`
     first checks that bertkit's dependencies import and stops at once, saying what failed, if
     not: datasets 5.2 needs pyarrow >= 24, a version the machine was not seen to have; if that
     is what fails, pack again with --pack-extra pyarrow==26.0.1, about 40 MB more, within the
     64 MiB a call carries)
  3. copy the files it returns into bench/results/gpu_speed/ and docs/benchmarks.md's GPU section.

On a CPU, end to end with a tiny random model (`bertkit model tiny`'s shape, 256 training
sentences, 2,000 texts): python bench/gpu_speed.py run --tiny. It took 12 minutes on a 2-core
machine shared with about seven other jobs (load average 18 to 23), most of it starting ten
Python processes; a check that the script works, not a measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import DATA, RESULTS, ROOT, minilm_path, table

PEERS = str(Path(__file__).with_name("gpu_peers.py"))
WHEELS = ("datasets", "dill", "multiprocess", "evaluate", "pydantic", "pydantic_core", "annotated-types",
          "typing-inspection", "typing_extensions")  # fmt: skip
MODEL_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
               "modules.json", "sentence_bert_config.json", "config_sentence_transformers.json")  # fmt: skip
GOALS = {"train": {"base": 1.5, "minilm": 1.2}, "predict_whole": 2.0, "predict_inner": 0.8, "embed_whole": 1.5}


def pack(target: Path, rows: int, extra: list[str]) -> None:
    """What the GPU machine lacks, into `target` (ignored by git): wheels (`extra`: more, as
    NAME==VERSION), data, MiniLM's files."""
    from importlib.metadata import version

    target.mkdir(parents=True, exist_ok=True)
    pins = [f"{name}=={version(name)}" for name in WHEELS] + list(extra)
    platforms = [a for p in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64")
                 for a in ("--platform", p)]  # fmt: skip
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    "--python-version", "3.12", "--implementation", "cp", *platforms, "-d", str(target / "whl"),
                    *pins], check=True)  # fmt: skip
    (target / "sst2").mkdir(exist_ok=True)
    lines = (DATA / "en/sst2/train.tsv").read_text(encoding="utf-8").splitlines()[: rows + 1]
    (target / "sst2/train.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    shutil.copy(DATA / "en/sst2/dev.tsv", target / "sst2/dev.tsv")
    copy_model_files(Path(minilm_path()), target / "minilm")
    if target.resolve().is_relative_to(ROOT):  # ignored by git, so that only `carry` takes it along
        exclude = subprocess.run(["git", "rev-parse", "--git-path", "info/exclude"], cwd=ROOT, capture_output=True,
                                 text=True, check=True).stdout.strip()  # fmt: skip
        exclude_file = (ROOT / exclude) if not Path(exclude).is_absolute() else Path(exclude)
        entry = f"/{target.resolve().relative_to(ROOT)}/"
        if entry not in exclude_file.read_text().splitlines():
            with open(exclude_file, "a") as handle:
                handle.write(entry + "\n")
    size = sum(f.stat().st_size for f in target.rglob("*") if f.is_file()) / 2**20
    print(f"packed {target} ({size:.1f} MiB): {', '.join(pins)}")


def copy_model_files(source: Path, target: Path, config: bool = True) -> None:
    """A model folder's config (unless not `config`), tokenizer and sentence-transformers files (no weights)."""
    target.mkdir(parents=True, exist_ok=True)
    for name in MODEL_FILES[0 if config else 1 :]:
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    if (source / "1_Pooling").is_dir():
        shutil.copytree(source / "1_Pooling", target / "1_Pooling", dirs_exist_ok=True)


def make_models(vocab: Path, work: Path, shapes: list[str]) -> dict[str, Path]:
    """Random-weight BERT models of each shape, with MiniLM's tokenizer and pooling files."""
    import torch
    from transformers import BertConfig, BertModel

    made = {}
    for shape in shapes:
        target = work / f"{shape}-random"
        if shape == "tiny":
            from bertkit.tiny_models import Shape, build_tiny

            build_tiny(str(vocab), target, Shape(layers=2, hidden=64, heads=2), overwrite=True)
        else:
            config = BertConfig.from_pretrained(vocab) if shape == "minilm" else BertConfig(vocab_size=30522)
            torch.manual_seed(0)
            BertModel(config).save_pretrained(target)
        copy_model_files(vocab, target, config=False)  # the tokenizer, and pooling files for encode
        made[shape] = target
    return made


class Run:
    """The steps of one run, their results (saved after each) and the log of every process."""

    def __init__(self, out: Path, budget: float, timeout: int, env: dict | None = None):
        self.out, self.budget, self.timeout, self.started = out, budget, timeout, time.perf_counter()
        self.env = env
        self.results: dict = {"steps": {}}
        self.log = open(out / "gpu_speed.log", "w", encoding="utf-8")

    def process(self, name: str, command: list[str]) -> dict | None:
        """Run `command` (unless the budget is spent); its wall time and RESULT line under `name`."""
        if time.perf_counter() - self.started > self.budget:
            self.results["steps"][name] = {"skipped": "time budget spent"}
            return None
        begun = time.perf_counter()
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=self.timeout, cwd=ROOT, env=self.env)
            output, code = done.stdout + done.stderr, done.returncode
        except subprocess.TimeoutExpired as err:
            output, code = f"timed out after {self.timeout} s\n{err.stdout or ''}{err.stderr or ''}", 124
        wall = round(time.perf_counter() - begun, 1)
        self.log.write(f"\n$ {' '.join(command)}\n[exit {code}, {wall} s]\n{output[-5000:]}\n")
        self.log.flush()
        result = next((json.loads(x[7:]) for x in reversed(output.splitlines()) if x.startswith("RESULT ")), None)
        row = {"wall": wall, "exit": code, **(result or {})}
        self.results["steps"][name] = row
        self.save()
        print(f"{name}: {row}", flush=True)
        return row if code == 0 else None

    def peer(self, name: str, recipe: str, *args) -> dict | None:
        return self.process(name, [sys.executable, PEERS, recipe, *map(str, args)])

    def bertkit(self, name: str, *args) -> dict | None:
        return self.process(name, [sys.executable, "-m", "bertkit", *map(str, args)])

    def save(self) -> None:
        self.results["seconds"] = round(time.perf_counter() - self.started, 1)
        (self.out / "gpu_speed.json").write_text(json.dumps(self.results, indent=1), encoding="utf-8")


def bertkit_rate(bundle: Path) -> float | None:
    """The Trainer's samples/s of a bundle's training (metrics.json's `training`)."""
    metrics = bundle / "metrics.json"
    return json.loads(metrics.read_text())["training"].get("train_samples_per_second") if metrics.is_file() else None


def run(args) -> dict:
    pack_dir = Path(args.pack) if args.pack and Path(args.pack).is_dir() else None
    data = pack_dir / "sst2" if pack_dir else DATA / "en/sst2"
    vocab = pack_dir / "minilm" if pack_dir else Path(minilm_path())
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    work = Path(args.work or tempfile.mkdtemp(prefix="gpu_speed_"))
    work.mkdir(parents=True, exist_ok=True)
    tiny = args.tiny
    n_train, n_texts = (args.train or (256 if tiny else 8000)), (args.texts or (2000 if tiny else 100_000))
    shapes = ["tiny"] if tiny else args.shapes.split(",")
    big, small = (shapes[0], shapes[0]) if tiny else ("base", "minilm")
    # on a (shared) CPU, one thread per process: several threads of several processes on a few
    # cores spend their time waiting for each other
    env = {**os.environ, "OMP_NUM_THREADS": "1"} if tiny else None
    budget = args.budget if args.budget is not None else (float("inf") if tiny else 450)
    session = Run(out, budget, args.timeout if not tiny else 10 * args.timeout, env)
    import torch
    import transformers

    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu (no CUDA GPU)"
    settings = {**vars(args), "train": n_train, "texts": n_texts}
    session.results.update(device=device, torch=torch.__version__, transformers=transformers.__version__,
                           date=time.strftime("%Y-%m-%d"), settings=settings)  # fmt: skip
    print(f"{device}; torch {torch.__version__}, transformers {transformers.__version__}", flush=True)

    lines = (data / "train.tsv").read_text(encoding="utf-8").splitlines()
    (work / "train.tsv").write_text("\n".join(lines[: n_train + 1]) + "\n", encoding="utf-8")
    dev = [line.split("\t")[0].strip() for line in (data / "dev.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    (work / "distinct.txt").write_text("\n".join(dev) + "\n", encoding="utf-8")
    texts = (dev * (n_texts // len(dev) + 1))[:n_texts]
    (work / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    models = make_models(vocab, work, shapes)

    def train(shape: str) -> None:
        config = work / f"{shape}.yaml"
        config.write_text(
            f"task: classify\nmodel:\n  name: {models[shape]}\n  max_length: 64\n"
            f"data:\n  train: {work / 'train.tsv'}\n  validation: {data / 'dev.tsv'}\n"
            "train:\n  epochs: 1\n  batch_size: 32\n  learning_rate: 5.0e-5\n  eval_strategy: 'no'\n"
            "classify:\n  strategy: finetune\n",  # fine-tuning's speed, whatever the sample's size
            encoding="utf-8",
        )
        bundle = work / f"bundle-{shape}"
        sets = [x for s in args.bertkit_set for x in ("--set", s)]
        row = session.bertkit(f"train {shape} bertkit", "train", "classify", "-c", config, "-o", bundle,
                              "--overwrite", *sets)  # fmt: skip
        if row is not None:
            row["train_samples_per_second"] = bertkit_rate(bundle)
            session.save()
        session.peer(f"train {shape} plain", "plain-train", models[shape], work / "train.tsv", n_train, work / "plain")
        session.peer(f"train {shape} bare", "bare-train", models[shape], work / "train.tsv", n_train)

    def predict(shape: str) -> None:
        bundle = work / f"bundle-{shape}"
        if not bundle.is_dir():
            return
        session.bertkit(f"predict {shape} bertkit", "predict", "-m", bundle, "-i", work / "texts.txt", "-o",
                        work / "predictions.jsonl")  # fmt: skip
        session.peer(f"predict {shape} pipeline", "pipeline", bundle, work / "texts.txt")
        session.peer(f"predict {shape} bertkit in process", "bertkit-predict", bundle, work / "texts.txt",
                     work / "distinct.txt")  # fmt: skip
        session.peer(f"predict {shape} bare", "bare-predict", bundle, work / "texts.txt")

    def embed(shape: str) -> None:
        model = models[shape]
        row = session.bertkit(f"embed {shape} bertkit", "embed", "-m", model, "-i", work / "texts.txt", "-o",
                              work / "bertkit.npy")  # fmt: skip
        session.peer(f"embed {shape} bertkit in process", "bertkit-embed", model, work / "texts.txt",
                     work / "distinct.txt")  # fmt: skip
        theirs = session.peer(f"embed {shape} sentence-transformers", "st-encode", model, work / "texts.txt",
                              work / "st.npy")  # fmt: skip
        if row is not None and theirs is not None:
            import numpy as np

            a, b = np.load(work / "bertkit.npy"), np.load(work / "st.npy")
            cosine = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
            session.results["steps"][f"embed {shape} sentence-transformers"]["min_cosine_bertkit"] = float(cosine.min())

    def profile(shape: str) -> None:
        session.peer(f"profile {shape} bertkit", "bertkit-profile", work / f"{shape}.yaml", work / "profiled",
                     out / "profile_bertkit.txt")  # fmt: skip
        session.peer(f"profile {shape} plain", "plain-train", models[shape], work / "train.tsv", n_train,
                     work / "plain-profiled", out / "profile_plain.txt")  # fmt: skip

    # in the order of what matters most, should the budget run out
    train(big)
    predict(big)
    embed(small)
    if small != big:
        train(small)
    profile(big)
    session.save()
    counts = {tool: json.loads((out / f"profile_{tool}.json").read_text()) for tool in ("bertkit", "plain")
              if (out / f"profile_{tool}.json").is_file()}  # fmt: skip
    session.results["profile"] = counts
    session.save()
    shown = summary(session.results["steps"], big, small, n_texts, counts)
    head = f"{device}; torch {torch.__version__}, transformers {transformers.__version__}; {n_texts:,} texts\n"
    (out / "gpu_speed.txt").write_text(head + shown + "\n", encoding="utf-8")
    print(head + shown)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)
    return session.results


def summary(steps: dict, big: str, small: str, n_texts: int, counts: dict) -> str:
    """The run as one table: each measure for bertkit and its peers, bertkit's ratio, the goal."""

    def get(name: str, key: str):
        step = steps.get(name, {})
        value = step.get(key) if step.get("exit", 0) == 0 else None  # a failed step has no numbers
        return round(value, 1) if isinstance(value, float) else value

    def exact(value):  # cosines and shares: the table's three decimals would hide what the goal asks
        return f"{value:.6f}" if isinstance(value, float) else value

    def ratio(a, b):
        return f"{a / b:.2f}x" if isinstance(a, int | float) and isinstance(b, int | float) and b else None

    rows = []
    for shape in dict.fromkeys([big, small]):
        rate = [get(f"train {shape} {tool}", "train_samples_per_second") for tool in ("bertkit", "plain", "bare")]
        goal = GOALS["train"].get(shape)
        rows.append({"measure": f"train {shape}, samples/s", "bertkit": rate[0], "plain HF": rate[1],
                     "bare": rate[2], "bertkit / plain": ratio(rate[0], rate[1]),
                     "goal": f">= {goal}x plain" if goal else None})  # fmt: skip
    whole = [get(f"predict {big} bertkit", "wall"), get(f"predict {big} pipeline", "wall")]
    rows.append({"measure": f"predict {big}, whole process s ({n_texts:,})", "bertkit": whole[0],
                 "plain HF": whole[1], "bertkit / plain": ratio(whole[1], whole[0]),
                 "goal": f">= {GOALS['predict_whole']}x pipeline"})  # fmt: skip
    inner = [get(f"predict {big} bertkit in process", "texts_per_second"), get(f"predict {big} pipeline",
             "texts_per_second"), get(f"predict {big} bare", "texts_per_second")]  # fmt: skip
    rows.append({"measure": f"predict {big}, in process texts/s", "bertkit": inner[0], "plain HF": inner[1],
                 "bare": inner[2], "bertkit / plain": ratio(inner[0], inner[1]),
                 "goal": f">= {GOALS['predict_inner']}x bare ({ratio(inner[0], inner[2])})"})  # fmt: skip
    agree = steps.get(f"predict {big} bertkit in process", {})
    rows.append({"measure": f"predict {big}, labels = fp32's ({agree.get('precision')})",
                 "bertkit": exact(agree.get("labels_equal_fp32")), "goal": ">= 0.995",
                 "bare": f"max score diff {agree.get('max_score_difference', 0):.2g}"})  # fmt: skip
    whole = [get(f"embed {small} bertkit", "wall"), get(f"embed {small} sentence-transformers", "wall")]
    rows.append({"measure": f"embed {small}, whole process s ({n_texts:,})", "bertkit": whole[0],
                 "plain HF": whole[1], "bertkit / plain": ratio(whole[1], whole[0]),
                 "goal": f">= {GOALS['embed_whole']}x encode"})  # fmt: skip
    inner = [get(f"embed {small} bertkit in process", "texts_per_second"),
             get(f"embed {small} sentence-transformers", "texts_per_second")]  # fmt: skip
    rows.append({"measure": f"embed {small}, in process texts/s", "bertkit": inner[0], "plain HF": inner[1],
                 "bertkit / plain": ratio(inner[0], inner[1])})  # fmt: skip
    vectors = steps.get(f"embed {small} bertkit in process", {})
    with_theirs = steps.get(f"embed {small} sentence-transformers", {}).get("min_cosine_bertkit")
    rows.append({"measure": f"embed {small}, min cosine with fp32 ({vectors.get('precision')})",
                 "bertkit": exact(vectors.get("min_cosine_fp32")), "goal": ">= 0.999",
                 "plain HF": f"with encode's: {exact(with_theirs)}" if with_theirs is not None else None})  # fmt: skip
    reads = [counts.get(tool, {}).get("reads_per_step") for tool in ("bertkit", "plain")]
    rows.append({"measure": f"train {big}, host reads of GPU values per step", "bertkit": reads[0],
                 "plain HF": reads[1]})  # fmt: skip
    return table(rows, ["measure", "bertkit", "plain HF", "bare", "bertkit / plain", "goal"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["pack", "run"])
    parser.add_argument("--pack", default=".gpu", help="pack: where to write; run: read from here when present")
    parser.add_argument("--pack-rows", type=int, default=16000, help="pack: SST-2 training rows carried")
    parser.add_argument("--pack-extra", action="append", default=[], help="pack: one more wheel, NAME==VERSION")
    parser.add_argument("--out", default=str(RESULTS / "gpu_speed"))
    parser.add_argument("--work", default=None, help="scratch folder, kept (default: a temporary one, removed)")
    parser.add_argument("--tiny", action="store_true", help="a tiny random model and small sizes (CPU check)")
    parser.add_argument("--train", type=int, default=None, help="training sentences (default 8000; tiny 256)")
    parser.add_argument("--texts", type=int, default=None, help="texts to predict and embed (100,000; tiny 2,000)")
    parser.add_argument("--shapes", default="base,minilm")
    parser.add_argument("--budget", type=float, default=None, help="no step starts after this many s (450; tiny: none)")
    parser.add_argument("--timeout", type=int, default=240, help="seconds one process may run")
    parser.add_argument("--bertkit-set", action="append", default=[], help="--set for bertkit's training runs")
    args = parser.parse_args()
    if args.mode == "pack":
        pack(ROOT / args.pack, args.pack_rows, args.pack_extra)
        return
    for tool in ("bertkit", "plain"):
        counts = Path(args.out) / f"profile_{tool}.json"
        counts.unlink(missing_ok=True)
    preflight()
    run(args)


def preflight() -> None:
    """Stop at once, saying why, when bertkit's dependencies do not import (a device run is dear)."""
    probe = "import datasets, evaluate, pydantic, pyarrow, bertkit.config, bertkit.training; print(pyarrow.__version__)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        sys.exit(f"bertkit's dependencies do not import here; carry the missing wheels "
                 f"(python bench/gpu_speed.py pack --pack-extra NAME==VERSION):\n{done.stderr[-3000:]}")


if __name__ == "__main__":
    main()
