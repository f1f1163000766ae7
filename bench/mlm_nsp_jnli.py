"""Next-sentence prediction or not: a small Japanese BERT pre-trained from scratch twice at the
same budget (same documents, vocabulary settings, steps and seed), once with masked LM alone and
once with masked LM + NSP (mlm.nsp), then each fine-tuned on JNLI at the same budget (bench,
not CI).

  pre-training: configs/ja/local/pretrain_nsp.yaml made tiny: 2 layers of 64, blocks of 64
                tokens, a 4,000-entry MeCab + WordPiece vocabulary, STEPS steps of batch 32 over
                800 livedoor article bodies (one article a document, one paragraph a line),
                validation on 50 dev articles (perplexity; NSP accuracy for the NSP run)
  fine-tuning:  configs/ja/local/jnli.yaml from each model: JNLI train (1,947 pairs), 3 epochs
                of batch 32 at 1e-3, pairs cut to 64 tokens, accuracy on JNLI dev (487 pairs)

Sized for about ten minutes on two shared CPU cores; it is a check that the switch works and
what it costs, not a measurement of what NSP is worth at BERT's scale.

With a model and budget this small, differences of a point or two are noise: the script runs
each seed given (default 42 and 7) so the spread can be read beside the difference.

Usage: python bench/mlm_nsp_jnli.py [--reuse] [SEED ...]
  --reuse: a pre-trained model this script already wrote (outputs/bench-nsp-*) is fine-tuned
           again instead of pre-trained again (to change only the fine-tuning)
Writes bench/results/mlm_nsp_jnli.json and prints a table.
"""

from __future__ import annotations

import json
import sys

from common import DATA, ROOT, require, save, table, train_bundle

STEPS = 200
SMALL = [
    "model.max_length=64",
    "mlm.vocab_size=4000",
    "mlm.hidden_size=64",
    "mlm.num_layers=2",
    "mlm.num_heads=2",
    "mlm.intermediate_size=256",
    f"train.max_steps={STEPS}",
    "train.eval_strategy=no",
    "train.logging_steps=50",
    "data.max_train_samples=800",
    "data.max_eval_samples=50",
]
FINE_TUNE = [
    "model.max_length=64",
    "train.epochs=3",
    "train.learning_rate=1.0e-3",  # jnli.yaml's 2e-4 left this 64-wide model at the majority class
    "train.eval_strategy=no",
    "train.logging_steps=50",
]


def run(seed: int, reuse: bool) -> list[dict]:
    rows = []
    for name, nsp in (("mlm", "false"), ("mlm+nsp", "true")):
        tag = f"nsp-{name.replace('+', '-')}-{seed}"
        sets = [*SMALL, f"mlm.nsp={nsp}", f"train.seed={seed}"]
        written = ROOT / "outputs" / f"bench-{tag}" / "bertkit.json"
        if reuse and written.exists():
            info, wall = json.loads(written.read_text()), 0.0
        else:
            info, wall = train_bundle("mlm-adapt", "configs/ja/local/pretrain_nsp.yaml", tag, sets)
        scores = info["metrics"]["validation"]
        bundle = f"outputs/bench-{tag}"
        tuning = [f"model.name={bundle}", f"train.seed={seed}", *FINE_TUNE]
        jnli, jnli_wall = train_bundle("classify", "configs/ja/local/jnli.yaml", f"{tag}-jnli", tuning)
        rows.append(
            {
                "pretraining": name,
                "seed": seed,
                "steps": info["training"]["train_steps"],
                "examples": info["training"]["train_examples"],
                "perplexity": scores["perplexity_after"],
                "nsp_accuracy": scores.get("nsp_accuracy_after"),
                "jnli_accuracy": jnli["metrics"]["validation"]["accuracy"],
                "pretrain_seconds": info["training"]["train_seconds"],
                "wall_seconds": round(wall + jnli_wall, 1),
            }
        )
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str]) -> None:
    require(DATA / "ja/livedoor/train.jsonl.gz")
    require(DATA / "ja/jnli/train.jsonl")
    seeds = [int(a) for a in argv if a != "--reuse"] or [42, 7]
    rows = []
    for seed in seeds:  # saved after each seed, so an interrupted run keeps what it measured
        rows += run(seed, "--reuse" in argv)
        path = save("mlm_nsp_jnli", {"steps": STEPS, "settings": SMALL, "fine_tune": FINE_TUNE, "runs": rows})
    columns = ["pretraining", "seed", "steps", "examples", "perplexity", "nsp_accuracy", "jnli_accuracy"]
    print(table(rows, [*columns, "pretrain_seconds", "wall_seconds"]))
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
