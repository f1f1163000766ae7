"""What a cross-encoder reranker adds to bi-encoder search, and what it costs per query (bench,
not CI). SQuAD v1.1 question -> paragraph, as bench/adapt_quality.py embed measures it.

  1. Training groups: QUERIES train-v1.1.json questions (seeded sample), each with its own
     paragraph as the positive and the NEGATIVES paragraphs the untuned MiniLM bi-encoder ranks
     highest among all 1,444 train paragraphs (the positive left out) as hard negatives; 100 more
     questions, mined the same way, are the validation data.
  2. `bertkit train rerank` on them (MiniLM with a new one-output head, --epochs, default 1).
  3. Test: DEV_QUERIES dev-v1.1.json questions (seeded sample) against all 226 distinct dev
     paragraphs. The bi-encoder (MiniLM as is, mean pooling, 256 tokens) ranks every
     paragraph; the reranker re-scores its top TOP candidates. recall@1 / @5 and MRR of the
     gold paragraph for both (a gold paragraph outside the reranked candidates counts as
     missed), and the whole query cost in ms/query: encoding the query, the exact search, and
     re-scoring TOP candidates, each timed on its own, on this machine.

Usage: python bench/rerank_quality.py [--queries 1000] [--negatives 3] [--dev-queries 300] [--top 20]
         [--learning-rate 1e-4] [--batch-size 8] [--epochs 1] [--bi-encoder PATH] [--name NAME]
Writes bench/results/rerank_quality[-NAME].json and prints a table. Work files go to outputs/bench-rerank/.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from common import DATA, ROOT, minilm_path, require, save, table

OUT = ROOT / "outputs" / "bench-rerank"
LENGTH = 256  # question + paragraph tokens the reranker reads (see the length check printed)


def squad(path):
    """(questions, gold paragraph index) and the distinct paragraphs of a SQuAD file."""
    data = json.loads(require(path).read_text())
    paragraphs, questions = [], []
    for article in data["data"]:
        for paragraph in article["paragraphs"]:
            paragraphs.append(paragraph["context"])
            questions += [(qa["question"], len(paragraphs) - 1) for qa in paragraph["qas"]]
    return questions, paragraphs


def ranks_of(scores: np.ndarray, gold: np.ndarray) -> np.ndarray:
    own = scores[np.arange(len(gold)), gold]
    return 1 + (scores > own[:, None]).sum(axis=1)


def scores_of(ranks) -> dict:
    ranks = np.asarray(ranks, dtype=float)
    return {
        "recall_at_1": float(np.mean(ranks <= 1)),
        "recall_at_5": float(np.mean(ranks <= 5)),
        "mrr": float(np.mean(1 / ranks)),
    }


def mine(encoder, questions, paragraphs, vectors, count: int) -> list[dict]:
    from bertkit.core.pooling import unit_vectors
    from bertkit.embeddings.search import top_hits

    asked = unit_vectors(encoder, [q for q, _ in questions], 64)
    hits, _ = top_hits(asked, vectors, count + 1)
    rows = []
    for (question, gold), found in zip(questions, hits, strict=True):
        negatives = [paragraphs[i] for i in found if i != gold][:count]
        rows.append({"query": question, "positive": paragraphs[gold], "negatives": negatives})
    return rows


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--negatives", type=int, default=3)
    parser.add_argument("--dev-queries", type=int, default=300)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--name", default="", help="results to bench/results/rerank_quality-NAME.json")
    parser.add_argument("--bi-encoder", default=None)
    parser.add_argument("--reranker", default=None, help="skip training: use this bundle")
    args = parser.parse_args(argv)
    from bertkit.core.pooling import unit_vectors
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.embeddings.rerank import Reranker
    from bertkit.embeddings.search import top_hits
    from bertkit.tasks.embed.encoder import load_encoder

    OUT.mkdir(parents=True, exist_ok=True)
    rng = random.Random(0)
    minilm = minilm_path()
    encoder = load_encoder(args.bi_encoder or minilm, "mean", True, LENGTH)
    result: dict = {"settings": vars(args), "max_length": LENGTH}

    # -------- the training groups
    bundle = args.reranker
    if bundle is None:
        train_q, train_p = squad(DATA / "en/squad/train-v1.1.json")
        chosen = rng.sample(train_q, args.queries + 100)
        started = time.perf_counter()
        train_vectors = unit_vectors(encoder, train_p, 64)
        rows = mine(encoder, chosen, train_p, train_vectors, args.negatives)
        result["mining_seconds"] = round(time.perf_counter() - started, 1)
        train_file = write_jsonl(OUT / "train.jsonl", rows[: args.queries])
        valid_file = write_jsonl(OUT / "validation.jsonl", rows[args.queries :])
        config = OUT / "rerank.yaml"
        config.write_text(
            f"task: rerank\nmodel:\n  name: {minilm}\n  max_length: {LENGTH}\n"
            f"data:\n  train: {train_file}\n  validation: {valid_file}\n  text_column: query\n"
            "  text_pair_column: positive\n"
            f"rerank:\n  negatives_per_query: {args.negatives}\n"
            f"train:\n  epochs: {args.epochs}\n  batch_size: {args.batch_size}\n  learning_rate: {args.learning_rate}\n"
            "  logging_steps: 10\n"
            f"output_dir: {OUT / 'model'}\n"
        )
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "bertkit", "train", "rerank", "-c", str(config), "--overwrite"], cwd=ROOT, check=True
        )
        result["train_wall_seconds"] = round(time.perf_counter() - started, 1)
        bundle = str(OUT / "model")
    info = json.loads((Path(bundle) / "bertkit.json").read_text())
    result["training"], result["validation"] = info["training"], info["metrics"]["validation"]

    # -------- the test: bi-encoder, then + reranker
    dev_q, dev_p = squad(DATA / "en/squad/dev-v1.1.json")
    tested = sorted(rng.sample(range(len(dev_q)), min(args.dev_queries, len(dev_q))))
    questions = [dev_q[i][0] for i in tested]
    gold = np.array([dev_q[i][1] for i in tested])
    corpus = unit_vectors(encoder, dev_p, 64)
    lengths = [len(ids) for ids in load_tokenizer(minilm)(questions, [dev_p[i] for i in gold])["input_ids"]]
    result["pairs_within_max_length"] = float(np.mean(np.asarray(lengths) <= LENGTH))
    result["pair_tokens_median"] = float(np.median(lengths))

    started = time.perf_counter()
    asked = np.stack([unit_vectors(encoder, [q], 1)[0] for q in questions])  # one query at a time, as served
    encode_ms = 1000 * (time.perf_counter() - started) / len(questions)
    started = time.perf_counter()
    hits, _ = top_hits(asked, corpus, args.top)
    search_ms = 1000 * (time.perf_counter() - started) / len(questions)
    bi_ranks = ranks_of(asked @ corpus.T, gold)

    reranker = Reranker(bundle, args.top, 32)
    reranker.scores(["warm up"], ["the model loads here"])
    started = time.perf_counter()
    rer_ranks = []
    for question, candidates, right in zip(questions, hits, gold, strict=True):
        scores = reranker.scores([question] * len(candidates), [dev_p[i] for i in candidates])
        order = candidates[np.argsort(-scores, kind="stable")]
        where = np.flatnonzero(order == right)
        rer_ranks.append(where[0] + 1 if len(where) else np.inf)
    rerank_ms = 1000 * (time.perf_counter() - started) / len(questions)

    rows = [
        {"system": "bi-encoder (MiniLM)" if not args.bi_encoder else "bi-encoder", **scores_of(bi_ranks)},
        {"system": f"+ reranker (top {args.top})", **scores_of(rer_ranks)},
    ]
    rows[0].update(ms_per_query=round(encode_ms + search_ms, 1))
    rows[1].update(ms_per_query=round(encode_ms + search_ms + rerank_ms, 1))
    result.update(
        rows=rows,
        candidates_hold_gold=float(np.mean(bi_ranks <= args.top)),
        ms_per_query={"encode": round(encode_ms, 2), "search": round(search_ms, 3), "rerank": round(rerank_ms, 1)},
        dev_queries=len(questions),
        corpus=len(dev_p),
    )
    path = save("rerank_quality" + (f"-{args.name}" if args.name else ""), result)
    print(table(rows, ["system", "recall_at_1", "recall_at_5", "mrr", "ms_per_query"]))
    print(json.dumps({k: v for k, v in result.items() if k not in ("rows",)}, indent=1))
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
