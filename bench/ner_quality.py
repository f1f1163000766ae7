"""NER quality and speed on CoNLL-2003 with the packaged MiniLM (bench, not CI).

  first3000: the first 3,000 sentences of eng.train, 1 epoch, batch 16, lr 5e-5, scored on the
             first 1,000 sentences of eng.testa. The Hugging Face run_ner.py example reached
             entity F1 0.650 here with these settings, in 79 s of training (38 sentences/s).
  peer:      training throughput of a pad-to-max-length Trainer recipe (first sub-word labels,
             every sentence padded to 128) on the first 800 sentences, against bertkit's in
             first3000 (same model, batch size and learning rate).
  full:      all of eng.train, 3 epochs, scored on all of eng.testa (target F1 >= 0.88).

Usage: python bench/ner_quality.py [first3000] [peer] [full]
Writes bench/results/ner_quality.json and prints a table.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from common import DATA, ROOT, minilm_path, require, save, table

TRAIN, DEV = DATA / "en/conll2003/eng.train", DATA / "en/conll2003/eng.testa"
CONFIG = "configs/local/conll2003.yaml"


def bertkit_run(name: str, sets: list[str]) -> dict:
    out = ROOT / "outputs" / f"bench-ner-{name}"
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "bertkit",
            "train",
            "ner",
            "-c",
            CONFIG,
            "-o",
            str(out),
            "--overwrite",
            "--set",
            f"data.train.path={TRAIN}",
            "--set",
            f"data.validation.path={DEV}",
            *sets,
        ],
        cwd=ROOT,
        check=True,
    )
    info = json.loads((out / "bertkit.json").read_text())
    scores, stats = info["metrics"]["validation"], info["training"]
    return {
        "run": name,
        "entity_f1": scores["f1"],
        "precision": scores["precision"],
        "recall": scores["recall"],
        "train_seconds": stats["train_seconds"],
        "sentences_per_s": stats["train_examples"] * info["config"]["train"]["epochs"] / stats["train_seconds"],
        "wall_seconds": round(time.perf_counter() - started, 1),
    }


def peer_run(n: int = 800) -> dict:
    """Pad every sentence to 128 tokens, label first sub-words: the tutorial recipe."""
    import datasets
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        Trainer,
        TrainingArguments,
        default_data_collator,
    )

    from bertkit.data.conll import read_conll
    from bertkit.tags import to_iob2

    sentences = [s for _, s in zip(range(n), read_conll(str(TRAIN), 0, 3), strict=False)]
    tags = [to_iob2(s["tags"], "IOB1").tags for s in sentences]
    names = sorted({t for seq in tags for t in seq})
    tok = AutoTokenizer.from_pretrained(minilm_path())
    enc = tok(
        [s["tokens"] for s in sentences],
        is_split_into_words=True,
        truncation=True,
        max_length=128,
        padding="max_length",
    )
    labels = []
    for i, seq in enumerate(tags):
        previous, row = None, []
        for w in enc.word_ids(i):
            row.append(-100 if w is None or w == previous else names.index(seq[w]))
            previous = w
        labels.append(row)
    train = datasets.Dataset.from_dict({**enc, "labels": labels})
    model = AutoModelForTokenClassification.from_pretrained(minilm_path(), num_labels=len(names))
    args = TrainingArguments(
        output_dir=str(ROOT / "outputs" / "bench-ner-peer"),
        num_train_epochs=1,
        per_device_train_batch_size=16,
        learning_rate=5e-5,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    trainer = Trainer(model=model, args=args, train_dataset=train, data_collator=default_data_collator)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    return {"run": "peer (pad to 128)", "train_seconds": round(seconds, 1), "sentences_per_s": n / seconds}


def main(argv: list[str]) -> None:
    require(TRAIN)
    chosen = [a for a in argv if a in ("first3000", "peer", "full")] or ["first3000", "peer", "full"]
    rows = []
    if "first3000" in chosen:
        row = bertkit_run(
            "first3000",
            [
                "--set",
                "data.max_train_samples=3000",
                "--set",
                "data.max_eval_samples=1000",
                "--set",
                "data.sample=first",
                "--set",
                "train.epochs=1",
            ],
        )
        rows.append({**row, "reference_f1": 0.650, "reference_train_seconds": 79})
    if "peer" in chosen:
        rows.append(peer_run())
    if "full" in chosen:
        rows.append({**bertkit_run("full", []), "target_f1": 0.88})
    first, peer = (next((r for r in rows if r["run"].startswith(p)), None) for p in ("first3000", "peer"))
    if first and peer:
        first["speedup_vs_peer"] = first["sentences_per_s"] / peer["sentences_per_s"]
    path = save("ner_quality", {"runs": rows})
    print(
        table(
            rows,
            [
                "run",
                "entity_f1",
                "precision",
                "recall",
                "train_seconds",
                "sentences_per_s",
                "speedup_vs_peer",
                "reference_f1",
                "target_f1",
            ],
        )
    )
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
