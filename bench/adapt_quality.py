"""What mlm-adapt and train embed buy with the packaged MiniLM (bench, not CI).

  mlm:    configs/local/scicite_mlm.yaml: continued masked-LM training on
          ../shared/data/en/text/scicite_sentences.txt (90/10 split, 1 epoch); validation
          perplexity before and after, on the same fixed masks. This checkpoint ships without its
          masked-LM head, so "before" is measured with a new, untrained head.
  embed:  configs/local/squad_embed.yaml: in-batch-negative training on (question, paragraph)
          pairs of 4,000 train-v1.1.json questions, 1 epoch; recall@1 / @5 and MRR of each of the
          1,058 dev-v1.1.json questions against all 226 distinct dev paragraphs, for MiniLM as is
          (before) and after.

Usage: python bench/adapt_quality.py [mlm] [embed]
Writes bench/results/adapt_quality.json and prints a table.
"""

from __future__ import annotations

import sys

from common import DATA, require, save, table, train_bundle

RUNS = {
    "mlm": ("mlm-adapt", "configs/local/scicite_mlm.yaml", DATA / "en/text/scicite_sentences.txt"),
    "embed": ("embed", "configs/local/squad_embed.yaml", DATA / "en/squad/train-v1.1.json"),
}


def run(name: str) -> list[dict]:
    task, config, data = RUNS[name]
    require(data)
    info, wall = train_bundle(task, config, name, [])
    scores, stats = info["metrics"]["validation"], info["training"]
    rows = []
    for key in scores:
        if key.endswith("_before"):
            metric = key.removesuffix("_before")
            rows.append(
                {
                    "run": name,
                    "metric": metric,
                    "before": scores[key],
                    "after": scores[metric + "_after"],
                    "train_seconds": stats["train_seconds"],
                    "examples": stats["train_examples"],
                    "wall_seconds": wall,
                }
            )
    return rows


def main(argv: list[str]) -> None:
    chosen = [a for a in argv if a in RUNS] or list(RUNS)
    rows = [row for name in chosen for row in run(name)]
    path = save("adapt_quality", {"runs": rows})
    print(table(rows, ["run", "metric", "before", "after", "examples", "train_seconds", "wall_seconds"]))
    print(f"written to {path}")


if __name__ == "__main__":
    main(sys.argv[1:])
