"""NER quality and speed on CoNLL-2003 with the packaged MiniLM (bench, not CI).

  first3000: the first 3,000 sentences of eng.train, 1 epoch, batch 16, lr 5e-5, scored on the
             first 1,000 sentences of eng.testa. The Hugging Face run_ner.py example reached
             entity F1 0.650 here with these settings, in 79 s of training (38 sentences/s).
  peer:      two Hugging Face Trainer recipes, each in its own process and timed from outside:
             run_ner.py's (dynamic padding, Trainer defaults) on the same 3,000 sentences, scored
             on the same 1,000, for F1 and wall time in the same run as bertkit; and the
             pad-to-128 tutorial recipe on 800 sentences, for throughput.
  full:      all of eng.train, 3 epochs, scored on all of eng.testa (target F1 >= 0.88).

Usage: python bench/ner_quality.py [first3000] [peer] [full]
Writes bench/results/ner_quality.json and prints a table.
"""

from __future__ import annotations

import json
import sys
import time

from common import DATA, ROOT, in_own_process, minilm_path, require, save, table, train_bundle

TRAIN, DEV = DATA / "en/conll2003/eng.train", DATA / "en/conll2003/eng.testa"
CONFIG = "configs/local/conll2003.yaml"


def bertkit_run(name: str, sets: list[str]) -> dict:
    info, wall = train_bundle(
        "ner", CONFIG, f"ner-{name}", [f"data.train.path={TRAIN}", f"data.validation.path={DEV}", *sets]
    )
    scores, stats = info["metrics"]["validation"], info["training"]
    return {
        "run": name,
        "entity_f1": scores["f1"],
        "lenient_f1": scores["lenient_f1"],
        "precision": scores["precision"],
        "recall": scores["recall"],
        "train_seconds": stats["train_seconds"],
        "sentences_per_s": stats["train_examples"] * info["config"]["train"]["epochs"] / stats["train_seconds"],
        "wall_seconds": wall,
    }


def peer_run(kind: str, n: int) -> dict:
    """A Hugging Face Trainer recipe in its own process, timed from outside like bertkit's run.

    dynamic: what run_ner.py does (dynamic padding with DataCollatorForTokenClassification,
             first sub-word labels, Trainer defaults: lr 5e-5, no warmup or weight decay),
             trained on the first n sentences and scored on the first 1,000 of eng.testa.
    pad128:  the tutorial recipe, every sentence padded to 128 tokens; throughput only.
    """
    return in_own_process(__file__, "--peer", kind, str(n))


def _peer(kind: str, n: int) -> dict:
    import datasets
    from seqeval.metrics import f1_score
    from seqeval.scheme import IOB2
    from transformers import (
        AutoModelForTokenClassification,
        AutoTokenizer,
        DataCollatorForTokenClassification,
        Trainer,
        TrainingArguments,
        default_data_collator,
    )

    from bertkit.core.data.conll import read_conll
    from bertkit.tasks.ner.tags import to_iob2

    def sentences(path, count):
        rows = [s for _, s in zip(range(count), read_conll(str(path), 0, 3), strict=False)]
        return [s["tokens"] for s in rows], [to_iob2(s["tags"], "IOB1").tags for s in rows]

    words, tags = sentences(TRAIN, n)
    names = sorted({t for seq in tags for t in seq})
    tok = AutoTokenizer.from_pretrained(minilm_path())
    pad = {"padding": "max_length", "max_length": 128} if kind == "pad128" else {}

    def features(words, tags):
        enc = tok(words, is_split_into_words=True, truncation=True, **pad)
        labels = []
        for i, seq in enumerate(tags):
            previous, row = None, []
            for w in enc.word_ids(i):
                row.append(-100 if w is None or w == previous else names.index(seq[w]))
                previous = w
            labels.append(row)
        return datasets.Dataset.from_dict({**enc, "labels": labels})

    model = AutoModelForTokenClassification.from_pretrained(minilm_path(), num_labels=len(names))
    args = TrainingArguments(
        output_dir=str(ROOT / "outputs" / f"bench-ner-peer-{kind}"),
        num_train_epochs=1,
        per_device_train_batch_size=16,
        per_device_eval_batch_size=16,
        learning_rate=5e-5,
        seed=42,
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        use_cpu=True,
    )
    collator = default_data_collator if kind == "pad128" else DataCollatorForTokenClassification(tok)
    trainer = Trainer(model=model, args=args, train_dataset=features(words, tags), data_collator=collator)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    row = {"run": f"peer ({kind})", "train_seconds": round(seconds, 1), "sentences_per_s": n / seconds}
    if kind == "dynamic":
        dev_words, dev_tags = sentences(DEV, 1000)
        out = trainer.predict(features(dev_words, [["O"] * len(w) for w in dev_words]))
        predicted = []
        for logits, labels in zip(out.predictions.argmax(-1), out.label_ids, strict=True):
            predicted.append([names[p] for p, gold in zip(logits, labels, strict=True) if gold != -100])
        # a word cut off by truncation would shorten a row; pad such rows with O to keep lengths equal
        predicted = [p + ["O"] * (len(t) - len(p)) for p, t in zip(predicted, dev_tags, strict=True)]
        row["lenient_f1"] = f1_score(dev_tags, predicted)
        row["entity_f1"] = f1_score(dev_tags, predicted, mode="strict", scheme=IOB2)
    return row


def main(argv: list[str]) -> None:
    require(TRAIN)
    if argv[:1] == ["--peer"]:
        print(json.dumps(_peer(argv[1], int(argv[2]))))
        return
    chosen = [a for a in argv if a in ("first3000", "peer", "full")] or ["first3000", "peer", "full"]
    rows = []
    if "first3000" in chosen:
        row = bertkit_run(
            "first3000",
            ["data.max_train_samples=3000", "data.max_eval_samples=1000", "data.sample=first", "train.epochs=1"],
        )
        rows.append({**row, "reference_f1": 0.650, "reference_train_seconds": 79})
    if "peer" in chosen:
        rows.append(peer_run("dynamic", 3000))
        rows.append(peer_run("pad128", 800))
    if "full" in chosen:
        rows.append({**bertkit_run("full", []), "target_f1": 0.88})
    first = next((r for r in rows if r["run"] == "first3000"), None)
    for peer in (r for r in rows if r["run"].startswith("peer")):
        if first:
            peer["bertkit_speedup"] = first["sentences_per_s"] / peer["sentences_per_s"]
    path = save("ner_quality", {"runs": rows})
    print(
        table(
            rows,
            [
                "run",
                "entity_f1",
                "lenient_f1",
                "precision",
                "recall",
                "train_seconds",
                "sentences_per_s",
                "wall_seconds",
                "bertkit_speedup",
                "reference_f1",
                "target_f1",
            ],
        )
    )
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
