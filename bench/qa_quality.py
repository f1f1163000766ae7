"""Extractive QA quality and speed on SQuAD with the packaged MiniLM (bench, not CI).

  same:     the first 2,000 questions of train-v1.1.json, 1 epoch, batch 16, max length 384,
            stride 128, lr 5e-5 with no warmup or weight decay: the settings of the Hugging Face
            run_qa.py example, which reached EM 6.7 / F1 12.1 here in 940 s of training
            (2.2 examples/s). Scored on all of dev-v1.1.json (1,058 questions).
  defaults: the same data and budget (1 epoch) with bertkit's QA settings
            (configs/local/squad.yaml: lr 3e-4 for the encoder and 3e-3 for the fresh QA head,
            10% warmup, linear decay, length-grouped batches).
  lr1e-4, head-lr: the steps in between, to see what each change is worth: lr 1e-4 with
            warmup and length grouping; then the head at 3e-3 as well.
  peer:     training throughput of run_qa.py's recipe (every window padded to 384 tokens) over
            12 steps on the same windows, in its own process, against bertkit's in `same`.
  full:     configs/local/squad.yaml as it is: all 7,628 questions, 2 epochs.
  v2:       configs/local/squad_v2.yaml on the first 2,000 questions of train-v2.0.json, 1 epoch;
            HasAns / NoAns / overall F1 on dev-v2.0.json, and the best null threshold.

Usage: python bench/qa_quality.py [same] [lr1e-4] [head-lr] [defaults] [peer] [full] [v2]
Writes bench/results/qa_quality.json and prints a table.
"""

from __future__ import annotations

import json
import sys
import time

from common import DATA, ROOT, in_own_process, minilm_path, require, save, table, train_bundle

SQUAD = DATA / "en/squad"
CONFIG, CONFIG_V2 = "configs/local/squad.yaml", "configs/local/squad_v2.yaml"
FIRST_2000 = ["data.max_train_samples=2000", "data.sample=first", "train.epochs=1"]
RUN_QA = [
    "train.learning_rate=5e-5",
    "train.head_learning_rate=null",
    "train.warmup_ratio=0",
    "train.weight_decay=0",
    "train.group_by_length=false",
]
RUNS = {
    "same": (CONFIG, FIRST_2000 + RUN_QA, {"reference_em": 6.7, "reference_f1": 12.1, "reference_train_seconds": 940}),
    "lr1e-4": (CONFIG, FIRST_2000 + ["train.learning_rate=1e-4", "train.head_learning_rate=null"], {}),
    "head-lr": (CONFIG, FIRST_2000 + ["train.learning_rate=1e-4"], {}),
    "defaults": (CONFIG, FIRST_2000, {"reference_em": 6.7, "reference_f1": 12.1}),
    "full": (CONFIG, [], {}),
    "v2": (CONFIG_V2, FIRST_2000, {}),
}


def bertkit_run(name: str) -> dict:
    config, sets, reference = RUNS[name]
    info, wall = train_bundle("qa", config, f"qa-{name}", sets)
    scores, stats = info["metrics"]["validation"], info["training"]
    row = {
        "run": name,
        "exact_match": scores["exact_match"],
        "f1": scores["f1"],
        "train_seconds": stats["train_seconds"],
        "windows_per_s": stats["train_samples_per_second"],
        "wall_seconds": wall,
        **reference,
    }
    for key in ("has_ans_f1", "no_ans_f1", "best_f1", "best_f1_threshold"):
        if key in scores:
            row[key] = scores[key]
    return row


def peer_run(steps: int = 12) -> dict:
    return in_own_process(__file__, "--peer", str(steps))


def _peer(steps: int) -> dict:
    """run_qa.py's recipe: windows padded to max_length, Trainer defaults; throughput only."""
    import datasets
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer, Trainer, TrainingArguments

    from bertkit.config import load_config
    from bertkit.core.data.squad import read_squad
    from bertkit.tasks.qa.answers import encode

    records = [r for _, r in zip(range(16 * steps), read_squad(str(SQUAD / "train-v1.1.json")), strict=False)]
    tok = AutoTokenizer.from_pretrained(minilm_path())
    qa = load_config(ROOT / CONFIG, task="qa").qa.model_dump()
    features = encode(
        tok,
        [r["question"] for r in records],
        [r["context"] for r in records],
        {
            "max_length": 384,
            "qa": qa,
        },
        [r["answers"] for r in records],
    )[: 16 * steps]
    keep = ("input_ids", "token_type_ids", "attention_mask", "start_positions", "end_positions")
    padded = [tok.pad({k: f[k] for k in keep}, padding="max_length", max_length=384) for f in features]
    model = AutoModelForQuestionAnswering.from_pretrained(minilm_path())
    args = TrainingArguments(
        output_dir=str(ROOT / "outputs" / "bench-qa-peer"),
        max_steps=steps,
        per_device_train_batch_size=16,
        learning_rate=5e-5,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=datasets.Dataset.from_list(padded))
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    return {"run": "peer (pad to 384)", "train_seconds": round(seconds, 1), "windows_per_s": 16 * steps / seconds}


def main(argv: list[str]) -> None:
    require(SQUAD / "train-v1.1.json")
    if argv[:1] == ["--peer"]:
        print(json.dumps(_peer(int(argv[1]))))
        return
    chosen = [a for a in argv if a in (*RUNS, "peer")] or [*RUNS, "peer"]
    rows = [peer_run() if name == "peer" else bertkit_run(name) for name in chosen]
    peer = next((r for r in rows if r["run"].startswith("peer")), None)
    if peer:
        for row in rows:
            if row is not peer:
                row["speedup_vs_peer"] = row["windows_per_s"] / peer["windows_per_s"]
    path = save("qa_quality", {"runs": rows})
    columns = ["run", "exact_match", "f1", "has_ans_f1", "no_ans_f1", "best_f1", "best_f1_threshold"]
    columns += ["train_seconds", "windows_per_s", "speedup_vs_peer", "wall_seconds", "reference_em", "reference_f1"]
    print(table(rows, columns))
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
