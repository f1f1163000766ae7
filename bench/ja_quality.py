"""A small Japanese BERT built here, and what its pre-training buys on five Japanese tasks
(bench, not CI).

  corpus:    the training splits of ../shared/data/ja (livedoor bodies, JSQuAD contexts, Wikipedia
             NER sentences) gathered into outputs/ja/corpus.txt, one paragraph a line (no dev
             text: the fine-tuning scores below are on dev)
  pretrain:  configs/ja/local/pretrain.yaml: a MeCab + WordPiece vocabulary learnt from that text,
             then masked-LM pre-training of a 4-layer, 256-wide BERT from scratch
  finetune:  each of configs/ja/local/{livedoor,jnli,jsts,ner,jsquad}.yaml twice, from the
             pre-trained model and from the same architecture and tokenizer with random weights
             (model.random_init: true); scores on dev

  word-order: whether the pre-trained model reads word order at all (part of pretrain; alone, it
             checks the model pre-trained earlier): dev-text perplexity as written and shuffled

Usage: python bench/ja_quality.py [corpus] [pretrain | word-order] [finetune] [TASK ...]
Writes bench/results/ja_quality.json and prints a table.
"""

from __future__ import annotations

import gzip
import json
import sys

from common import DATA, RESULTS, ROOT, require, save, table, train_bundle

JA = DATA / "ja"
CORPUS = ROOT / "outputs" / "ja" / "corpus.txt"
BASE = "outputs/bench-ja-pretrain"
TASKS = {
    "livedoor": ("classify", "accuracy"),
    "jnli": ("classify", "accuracy"),
    "jsts": ("classify", "spearman"),
    "ner": ("ner", "f1"),
    "jsquad": ("qa", "f1"),
}


def corpus() -> dict:
    lines = []
    with gzip.open(require(JA / "livedoor/train.jsonl.gz"), "rt", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            lines += [p.strip() for p in row["body"].splitlines() if p.strip()]
    squad = json.loads(require(JA / "jsquad/train.json").read_text(encoding="utf-8"))
    lines += sorted({p["context"].split(" [SEP] ", 1)[-1] for a in squad["data"] for p in a["paragraphs"]})
    lines += [r["text"] for r in json.loads(require(JA / "ner_wikipedia/train.json").read_text(encoding="utf-8"))]
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    CORPUS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return {"lines": len(lines), "characters": sum(map(len, lines))}


def pretrain() -> dict:
    if not CORPUS.exists():
        corpus()
    info, wall = train_bundle("mlm-adapt", "configs/ja/local/pretrain.yaml", "ja-pretrain", [])
    link = ROOT / "outputs" / "ja" / "bert-small"  # where configs/ja/local/*.yaml look for it
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(ROOT / BASE)
    scores = info["metrics"]["validation"]
    return {
        "perplexity_before": scores.get("perplexity_before"),
        "perplexity_after": scores.get("perplexity_after"),
        "train_seconds": info["training"]["train_seconds"],
        "wall_seconds": wall,
        **word_order(ROOT / BASE),
    }


def word_order(model_dir) -> dict:
    """Does the model use word order? Masked-LM perplexity on held-out text (the Wikipedia NER dev
    sentences, in blocks of 128 tokens, whole words masked with a fixed seed), once as written and
    once with the tokens of each block shuffled (the same tokens masked). A model that has learnt
    only which words occur together in a text, a bag of words, scores both the same; one that reads
    its neighbours scores the shuffled text worse."""
    import torch
    from transformers import AutoModelForMaskedLM

    from bertkit.core.inference import forward
    from bertkit.core.tokenization import load_tokenizer
    from bertkit.tasks.mlm.inputs import examples
    from bertkit.tasks.mlm.masking import fixed_masks
    from bertkit.tasks.mlm.scoring import losses_of_rows, score_rows

    if not (model_dir / "config.json").exists():
        sys.exit(f"{model_dir} holds no model: pre-train one first (python bench/ja_quality.py corpus pretrain)")
    tokenizer = load_tokenizer(str(model_dir))
    model = AutoModelForMaskedLM.from_pretrained(str(model_dir)).eval()
    texts = [r["text"] for r in json.loads(require(JA / "ner_wikipedia/dev.json").read_text(encoding="utf-8"))]
    info = {"block_size": 128, "max_length": 128, "mode": "blocks"}
    blocks = [
        row["input_ids"] for row in examples(tokenizer, texts, info, "validation") if len(row["input_ids"]) == 128
    ]
    masked = fixed_masks({"input_ids": blocks}, tokenizer, 0.15, True, 42)
    inner = (torch.randperm(126, generator=torch.Generator().manual_seed(0)) + 1).tolist()
    order = [0, *inner, 127]  # [CLS] and the last [SEP] stay where they are
    rows = [
        {"input_ids": ids, "labels": labels} for ids, labels in zip(masked["input_ids"], masked["labels"], strict=True)
    ]
    shuffled = [{key: [row[key][i] for i in order] for key in row} for row in rows]
    result = {"word_order_blocks": len(blocks)}
    for name, features in (("as_written", rows), ("shuffled", shuffled)):
        losses = forward(model, tokenizer, features, 32, output=losses_of_rows)
        result[f"perplexity_{name}"] = round(score_rows(losses)["perplexity"], 1)
    return result


def finetune(name: str) -> list[dict]:
    task, metric = TASKS[name]
    rows = []
    for start, sets in (("pre-trained", []), ("random init", ["model.random_init=true"])):
        info, wall = train_bundle(task, f"configs/ja/local/{name}.yaml", f"ja-{name}-{start[:6]}", sets)
        scores = info["metrics"]["validation"]
        row = {"task": name, "start": start, metric: scores[metric], "train_seconds": info["training"]["train_seconds"]}
        for extra in ("exact_match", "accuracy", "pearson"):
            if extra in scores and extra != metric:
                row[extra] = scores[extra]
        rows.append({**row, "wall_seconds": wall})
    return rows


def main(argv: list[str]) -> None:
    earlier = RESULTS / "ja_quality.json"  # stages run separately add to one record
    merged = json.loads(earlier.read_text()) if earlier.exists() else {}
    result = {}
    if "corpus" in argv:
        result["corpus"] = corpus()
        print(result["corpus"])
    if "pretrain" in argv:
        result["pretrain"] = pretrain()
        print(result["pretrain"])
    elif "word-order" in argv:  # the check alone, on the model pre-trained earlier
        result["pretrain"] = {**merged.get("pretrain", {}), **word_order(ROOT / BASE)}
        print(result["pretrain"])
    chosen = [a for a in argv if a in TASKS] or (list(TASKS) if "finetune" in argv else [])
    rows = [row for name in chosen for row in finetune(name)]
    if rows:
        result["finetune"] = rows
        print(table(rows, ["task", "start", *sorted({k for r in rows for k in r} - {"task", "start"})]))
    if "finetune" in result:
        done = {(r["task"], r["start"]) for r in result["finetune"]}
        result["finetune"] += [r for r in merged.get("finetune", []) if (r["task"], r["start"]) not in done]
    print(f"written to {save('ja_quality', {**merged, **result})}")


if __name__ == "__main__":
    main(sys.argv[1:])
