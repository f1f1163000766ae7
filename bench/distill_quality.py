"""Distillation on SST-2 (bench, not CI): a 3-layer student [0, 2, 4] distilled from a fine-tuned
6-layer MiniLM, against the same 3-layer student trained on the labels alone, same steps.

  teacher:   MiniLM (6 layers) fine-tuned on N training sentences (default 4,000), max_length 64,
             --teacher-epochs (default 3: a teacher trained 1 epoch was beaten by the labels-only
             student, see docs/distill.md), batch 16, lr 5e-5 (classify's default; --lr for
             another, the same for every run).
  distilled: `bertkit train distill`, layers [0, 2, 4] of the teacher, temperature / alpha as given.
             Students train with train.eval_strategy no: each is scored once, as it ends, on dev.
  direct:    the same student start, the same data and steps, labels only (distill.alpha: 1, which
             is exactly fine-tuning: the teacher's outputs are not used).
  *_pre:     (--start pretrained or both) the same two, starting from the pretrained MiniLM's layers
             [0, 2, 4] instead of the fine-tuned teacher's.
  U more training sentences (default 60,000), labels removed, as data.unlabeled (--unlabeled U;
  0 for none), and both students train the same --student-steps (default 6,000: 1.5 epochs of the
  distilled student's 64,000 sentences). These defaults are the run that met the issue's goals
  (docs/distill.md): about 40 minutes on a 2-core CPU.

Dev accuracy (872 sentences) of each, and `bertkit predict` texts/s of teacher and student on the
dev sentences x4 (--speed-copies), in this process, alternating, median of 3.

Usage: python bench/distill_quality.py [--train N] [--lr LR] [--speed-copies K] [--unlabeled U]
       [--temperature T] [--alpha A] [--start teacher|pretrained|both] [--parallel] [--skip-teacher]
       [--teacher-epochs E] [--student-steps S] [--seed SEED] [--name NAME]
Writes bench/results/distill_quality[-NAME].json and prints a table.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import time

from common import DATA, ROOT, minilm_path, require, save, table, train_bundle

WORK = ROOT / "outputs" / "bench-distill"


def write_splits(n_train: int, n_unlabeled: int) -> dict:
    """Seeded sample of SST-2 train: N labelled sentences and U more without labels."""
    rows = list(csv.DictReader(open(require(DATA / "en/sst2/train.tsv"), encoding="utf-8"), delimiter="\t"))
    random.Random(0).shuffle(rows)
    WORK.mkdir(parents=True, exist_ok=True)
    labelled = WORK / "train.tsv"
    with open(labelled, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t")
        writer.writerow(["text", "label"])
        writer.writerows([r["text"].strip(), r["label"]] for r in rows[:n_train])
    out = {"train": labelled, "unlabeled": None}
    if n_unlabeled:
        out["unlabeled"] = WORK / "unlabeled.txt"
        texts = [r["text"].strip() for r in rows[n_train : n_train + n_unlabeled]]
        out["unlabeled"].write_text("\n".join(texts) + "\n", encoding="utf-8")
    return out


def config(name: str, body: str, lr: float, seed: int = 42) -> str:
    path = WORK / f"{name}.yaml"
    dev = require(DATA / "en/sst2/dev.tsv")
    path.write_text(
        body + f"data:\n  train: {WORK / 'train.tsv'}\n  validation: {dev}\n"
        f"train:\n  epochs: 1\n  batch_size: 16\n  learning_rate: {lr}\n  logging_steps: 50\n  seed: {seed}\n"
    )
    return str(path)


def run(name: str, task: str, body: str, sets: list[str], lr: float, seed: int = 42, threads=None) -> dict:
    print(f"== {name}", flush=True)
    info, wall = train_bundle(task, config(name, body, lr, seed), f"distill-{name}", sets, threads)
    return {
        "model": name,
        "dev_accuracy": info["metrics"]["validation"]["accuracy"],
        "layers": info.get("distillation", {}).get("student_layers") or 6,
        "steps": info["training"]["train_steps"],
        "train_examples": info["training"]["train_examples"],
        "train_seconds": info["training"]["train_seconds"],
        "wall_seconds": wall,
        "seed": seed,
    }


def speed(bundles: dict[str, str], copies: int, repeats: int = 3) -> dict[str, float]:
    """texts/s of `bertkit predict` (the library call behind it) on the dev sentences x `copies`."""
    from bertkit.prediction import predict_file

    dev = list(csv.DictReader(open(DATA / "en/sst2/dev.tsv", encoding="utf-8"), delimiter="\t"))
    texts = WORK / "speed.txt"
    texts.write_text("\n".join(r["text"].strip() for r in dev * copies) + "\n", encoding="utf-8")
    n = len(dev) * copies
    times: dict[str, list[float]] = {name: [] for name in bundles}
    for _ in range(repeats):  # alternating, so a busy moment of the shared CPU hits both
        for name, path in bundles.items():
            started = time.perf_counter()
            predict_file(path, str(texts), str(WORK / f"speed-{name}.jsonl"))
            times[name].append(time.perf_counter() - started)
    return {name: round(n / statistics.median(t), 1) for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train", type=int, default=4000)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--speed-copies", type=int, default=4, help="dev sentences x this, timed")
    parser.add_argument("--unlabeled", type=int, default=60000)
    parser.add_argument("--temperature", type=float, default=2.0)
    parser.add_argument("--alpha", type=float, default=0.5)
    parser.add_argument(
        "--start", choices=("teacher", "pretrained", "both"), default="teacher",
        help="the students' layers [0, 2, 4]: the fine-tuned teacher's, pretrained MiniLM's (as DistilBERT), or both",
    )  # fmt: skip
    parser.add_argument("--skip-teacher", action="store_true", help="reuse outputs/bench-distill-teacher")
    parser.add_argument("--parallel", action="store_true", help="train the students at the same time")
    parser.add_argument("--teacher-epochs", type=float, default=3.0, help="train.epochs of the teacher")
    parser.add_argument("--student-steps", type=int, default=6000, help="train.max_steps of both students (0: 1 epoch)")
    parser.add_argument("--seed", type=int, default=42, help="train.seed of the students")
    parser.add_argument("--name", default="")
    args = parser.parse_args()
    files = write_splits(args.train, args.unlabeled)
    minilm = minilm_path()
    teacher = ROOT / "outputs" / "bench-distill-teacher"
    rows = []
    body = f"task: classify\nmodel:\n  name: {minilm}\n  max_length: 64\n"
    if args.skip_teacher:
        import json

        info = json.loads((teacher / "bertkit.json").read_text())
        t = info["training"]
        rows.append(
            {
                "model": "teacher",
                "dev_accuracy": info["metrics"]["validation"]["accuracy"],
                "layers": 6,
                "steps": t["train_steps"],
                "train_examples": t["train_examples"],
                "train_seconds": t["train_seconds"],
            }
        )
    else:
        rows.append(run("teacher", "classify", body, [f"train.epochs={args.teacher_epochs}"], args.lr))
    unlabeled = f"  unlabeled: {files['unlabeled']}\n" if files["unlabeled"] else ""
    starts = [("", None)] if args.start != "pretrained" else []
    starts += [("_pre", minilm)] if args.start != "teacher" else []
    jobs = []
    for suffix, start in starts:
        model = f"model:\n  name: {start}\n" if start else ""
        for name, alpha, extra in (("distilled", args.alpha, unlabeled), ("direct", 1.0, "")):
            body = (
                f"task: distill\n{model}distill:\n  teacher: {teacher}\n  student_layers: [0, 2, 4]\n"
                f"  temperature: {args.temperature}\n  alpha: {alpha}\n"
            )
            # no evaluation during training: the model scored is the last one, never a checkpoint picked
            # on the dev set the table reports (a student with more epochs would get more picks)
            sets = ["train.eval_strategy=no"]
            sets += [f"data.unlabeled={files['unlabeled']}"] if extra else []
            sets += [f"train.max_steps={args.student_steps}"] if args.student_steps else []
            jobs.append((name + suffix, "distill", body, sets, args.lr, args.seed))
    if args.parallel:  # the students at once (their quality does not depend on it; their times do)
        import os
        from concurrent.futures import ThreadPoolExecutor

        threads = max(1, (os.cpu_count() or 1) // len(jobs))  # the cores split between the runs
        with ThreadPoolExecutor(len(jobs)) as pool:
            rows += list(pool.map(lambda job: run(*job, threads=threads), jobs))
    else:
        rows += [run(*job) for job in jobs]
    student = ROOT / "outputs" / f"bench-distill-distilled{starts[0][0]}"
    rates = speed({"teacher": str(teacher), "student": str(student)}, args.speed_copies)
    for row in rows:
        row["texts_per_s"] = rates["teacher"] if row["model"] == "teacher" else rates["student"]
    result = {
        "settings": vars(args),
        "runs": rows,
        "speedup": round(rates["student"] / rates["teacher"], 2),
    }
    save("distill_quality" + (f"-{args.name}" if args.name else ""), result)
    columns = ["model", "layers", "dev_accuracy", "steps", "train_examples", "train_seconds", "texts_per_s"]
    print(table(rows, columns))
    print(f"student / teacher predict speed: {result['speedup']}x")


if __name__ == "__main__":
    main()
