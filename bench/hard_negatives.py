"""Hard negatives for `train embed` (bench, not CI): SQuAD question -> paragraph retrieval with the
packaged MiniLM, trained with in-batch negatives only, then on the same pairs with mined hard
negatives, at the same training budget (same pairs, batch size, epochs, so the same steps).

  1. N (question, paragraph) pairs drawn (seed 0) from ../shared/data/en/squad/train-v1.1.json,
     and every distinct train paragraph as the corpus; both written under outputs/bench-hard-negatives/
     (not the repository).
  2. in-batch only: configs/local/squad_embed.yaml on those pairs.
  3. `bertkit mine-negatives` with MiniLM as it is (K negatives a pair, the default ceiling),
     then the same training with data.negative_column: negatives.
  Both are scored on the 1,058 dev-v1.1.json questions against all 226 distinct dev paragraphs
  (recall@1 / @5, MRR), before and after training.

Usage: python bench/hard_negatives.py [--pairs N] [--negatives K] [--batch-size B] [--epochs E]
                                      [--pair-max-length L]
Writes bench/results/hard_negatives.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time

from common import DATA, ROOT, minilm_path, require, save, table, train_bundle

CONFIG = "configs/local/squad_embed.yaml"
WORK = ROOT / "outputs" / "bench-hard-negatives"


def flat(text: str) -> str:
    return " ".join(text.split())  # one line each, so the corpus file and the pairs agree exactly


def write_inputs(n: int) -> tuple[str, str]:
    squad = json.loads(require(DATA / "en/squad/train-v1.1.json").read_text())
    pairs, paragraphs = [], []
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            context = flat(paragraph["context"])
            paragraphs.append(context)
            pairs += [{"question": flat(qa["question"]), "context": context} for qa in paragraph["qas"]]
    chosen = random.Random(0).sample(pairs, n)
    WORK.mkdir(parents=True, exist_ok=True)
    (WORK / "pairs.jsonl").write_text("".join(json.dumps(p) + "\n" for p in chosen))
    (WORK / "corpus.txt").write_text("\n".join(dict.fromkeys(paragraphs)) + "\n")
    print(f"{n} pairs of {len(pairs)}, corpus of {len(set(paragraphs))} paragraphs")
    return str(WORK / "pairs.jsonl"), str(WORK / "corpus.txt")


def mine(pairs: str, corpus: str, k: int) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "bertkit", "mine-negatives", "-m", minilm_path(), "--pairs", pairs, "--corpus", corpus,
         "-o", str(WORK / "triplets.jsonl"), "-n", str(k), "--text-column", "question", "--text-pair-column",
         "context", "--overwrite", "--no-cache"],
        cwd=ROOT,
        check=True,
    )
    return round(time.perf_counter() - started, 1)


def row(name: str, info: dict, wall: float, extra: dict) -> dict:
    scores, stats = info["metrics"]["validation"], info["training"]
    out = {"run": name, **{k: scores[k] for k in ("recall_at_1_before", "recall_at_1", "recall_at_5", "mrr")}}
    return {**out, "steps": stats.get("train_steps"), "train_seconds": stats["train_seconds"],
            "wall_seconds": wall, **extra}


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=1600)
    parser.add_argument("--negatives", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--pair-max-length", type=int, default=256, help="paragraph tokens (and negatives')")
    args = parser.parse_args(argv)
    pairs, corpus = write_inputs(args.pairs)
    common = ["data.max_train_samples=null", f"train.batch_size={args.batch_size}", f"train.epochs={args.epochs}",
              f"embed.pair_max_length={args.pair_max_length}"]
    info, wall = train_bundle("embed", CONFIG, "hn-in-batch", [f"data.train={pairs}", *common])
    rows = [row("in-batch only", info, wall, {})]
    mine_seconds = mine(pairs, corpus, args.negatives)
    triplets = str(WORK / "triplets.jsonl")
    mined = [json.loads(line)["negatives"] for line in open(triplets, encoding="utf-8")]
    sets = [f"data.train={triplets}", "data.negative_column=negatives", *common]
    info, wall = train_bundle("embed", CONFIG, "hn-mined", sets)
    negatives = sum(len(m) for m in mined)
    rows.append(row(f"+ {args.negatives} mined negative(s)", info, wall, {"mine_seconds": mine_seconds,
                                                                          "negatives": negatives}))
    path = save("hard_negatives", {"settings": vars(args), "runs": rows})
    columns = ["run", "recall_at_1_before", "recall_at_1", "recall_at_5", "mrr", "steps", "train_seconds",
               "mine_seconds", "wall_seconds"]
    print(table(rows, columns))
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
