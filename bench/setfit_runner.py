"""One cell of bench/fewshot_quality.py through the `setfit` library (1.2.0), run by the side
environment's python (setfit and sentence-transformers are not bertkit's dependencies):

  python bench/setfit_runner.py MODEL TRAIN.jsonl TEST.jsonl SEED MAX_LENGTH

SetFit's usual recipe, the same as bertkit's contrastive route in the bench: 20 rounds of pairs
(num_iterations), one epoch, batch 16, body learning rate 2e-5, logistic-regression head. Prints
one JSON line: the test accuracy and the training time.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time


def rows(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main(model_path: str, train_path: str, test_path: str, seed: str, max_length: str) -> None:
    from datasets import Dataset
    from setfit import SetFitModel, Trainer, TrainingArguments

    train, test = rows(train_path), rows(test_path)
    model = SetFitModel.from_pretrained(model_path)
    model.model_body.max_seq_length = int(max_length)
    scratch = tempfile.mkdtemp(prefix="setfit-")  # its checkpoints (default ./checkpoints) stay out of the repo
    args = TrainingArguments(
        output_dir=scratch,
        batch_size=16,
        num_epochs=1,
        num_iterations=20,
        body_learning_rate=2e-5,
        seed=int(seed),
        max_length=int(max_length),
    )
    data = Dataset.from_list([{"text": r["text"], "label": r["label"]} for r in train])
    trainer = Trainer(model=model, args=args, train_dataset=data)
    started = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - started
    predicted = model.predict([r["text"] for r in test], batch_size=64, as_numpy=True)
    right = sum(str(p) == r["label"] for p, r in zip(predicted, test, strict=True))
    print(json.dumps({"accuracy": right / len(test), "train_seconds": round(seconds, 1)}))


if __name__ == "__main__":
    main(*sys.argv[1:])
