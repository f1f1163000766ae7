"""Are `bertkit explain`'s attributions faithful? Deleting the words they rank highest must hurt
the prediction far more than deleting as many random words (bench, not CI).

  Model: MiniLM fine-tuned on 2,000 SST-2 training sentences (configs/local/sst2.yaml with
         data.max_train_samples=2000, model.max_length=64, 1 epoch), or the bundle given by
         --model.
  Texts: 200 SST-2 dev sentences (a seeded sample).
  For each sentence, method (integrated gradients, occlusion) and baseline ([PAD], [MASK]): the
  k = 1, 2, 3 words with the largest attribution towards the predicted label are deleted from
  the text, and so are k random words (the same random words for every method); reported is the
  drop of the predicted label's probability (mean and median over the sentences with more than
  k words). Also the completeness error of integrated gradients at 16, 32 and 64 steps
  (|sum of attributions - (score - baseline score)|, and the share of sentences within the
  tolerance 0.01 * max(1, |score - baseline score|)).

Usage: python bench/explain_faithfulness.py [--model BUNDLE] [--sentences 200] [--threads 1]
Writes bench/results/explain_faithfulness.json and prints the tables.
"""

from __future__ import annotations

import argparse
import csv
import random
import statistics
import time

from common import DATA, ROOT, require, save, table, train_bundle

METHODS = [(m, b) for m in ("integrated-gradients", "occlusion") for b in ("pad", "mask")]
KS = (1, 2, 3)
STEPS = (16, 32, 64)


def bundle_path(given: str | None) -> str:
    if given:
        return given
    sets = ["data.max_train_samples=2000", "model.max_length=64", "train.eval_strategy=no"]
    train_bundle("classify", "configs/local/sst2.yaml", "explain-sst2", sets)
    return str(ROOT / "outputs" / "bench-explain-sst2")


def dev_sentences(count: int) -> list[str]:
    with open(require(DATA / "en/sst2/dev.tsv"), encoding="utf-8") as handle:
        texts = [row["text"].strip() for row in csv.DictReader(handle, delimiter="\t")]
    return random.Random(0).sample(texts, count)


def probabilities(model, tokenizer, texts: list[str], label: int) -> list[float]:
    import torch

    encoded = tokenizer(texts, padding=True, truncation=True, max_length=128, return_tensors="pt")
    with torch.no_grad():
        logits = model(**{k: v.to(model.device) for k, v in encoded.items()}).logits
    return torch.softmax(logits.float(), -1)[:, label].tolist()


def without(text: str, words: list[dict], chosen: list[int]) -> str:
    kept = [w for i, w in enumerate(words) if i not in set(chosen)]
    return " ".join(text[w["start"] : w["end"]] for w in kept)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model")
    parser.add_argument("--sentences", type=int, default=200)
    # one thread: on the shared 2-core machine two threads ran a forward pass 20x slower than one
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    from bertkit.explain.run import TOLERANCE, Explanation, explain
    from bertkit.tasks.bundle import open_bundle

    bundle = open_bundle(bundle_path(args.model))
    model = bundle.load_model("AutoModelForSequenceClassification", "cpu")
    tokenizer = bundle.load_tokenizer()
    texts = dev_sentences(args.sentences)
    drops = {(m, b, k, kind): [] for m, b in METHODS for k in KS for kind in ("top", "random")}
    errors = {steps: [] for steps in STEPS}
    seconds = {m: 0.0 for m in METHODS}
    rng = random.Random(1)
    for number, text in enumerate(texts, 1):
        found = {}
        for method, baseline in METHODS:
            started = time.perf_counter()
            asked = Explanation(text, method=method, baseline=baseline)
            found[method, baseline] = explain(model, tokenizer, bundle.info, asked)
            seconds[method, baseline] += time.perf_counter() - started
        words = found[METHODS[0]]["words"]
        label = found[METHODS[0]]["target_index"]
        for steps in STEPS:
            asked = Explanation(text, steps=steps)
            result = found[METHODS[0]] if steps == 64 else explain(model, tokenizer, bundle.info, asked)
            change = result["score"] - result["baseline_score"]
            errors[steps].append((abs(result["completeness_error"]), max(1.0, abs(change))))
        variants, keys = [text], []
        for k in KS:
            if len(words) <= k:
                continue
            random_words = rng.sample(range(len(words)), k)
            for method, baseline in METHODS:
                values = found[method, baseline]["word_attributions"]
                top = sorted(range(len(words)), key=lambda i: -values[i])[:k]
                variants.append(without(text, words, top))
                keys.append((method, baseline, k, "top"))
                variants.append(without(text, words, random_words))
                keys.append((method, baseline, k, "random"))
        probs = probabilities(model, tokenizer, variants, label)
        for key, p in zip(keys, probs[1:], strict=True):
            drops[key].append(probs[0] - p)
        if number % 20 == 0:
            print(f"{number}/{len(texts)} sentences", flush=True)
    rows = []
    for method, baseline in METHODS:
        for k in KS:
            top, rand = drops[method, baseline, k, "top"], drops[method, baseline, k, "random"]
            rows.append(
                {
                    "method": method,
                    "baseline": baseline,
                    "k": k,
                    "sentences": len(top),
                    "top_mean": statistics.mean(top),
                    "top_median": statistics.median(top),
                    "random_mean": statistics.mean(rand),
                    "random_median": statistics.median(rand),
                    "seconds_per_text": seconds[method, baseline] / len(texts),
                }
            )
    completeness = []
    for steps, found_errors in errors.items():
        absolute = sorted(e for e, _ in found_errors)
        completeness.append(
            {
                "steps": steps,
                "median_abs_error": statistics.median(absolute),
                "p95_abs_error": absolute[int(0.95 * (len(absolute) - 1))],
                "max_abs_error": absolute[-1],
                "within_tolerance": sum(e <= TOLERANCE * scale for e, scale in found_errors) / len(found_errors),
            }
        )
    path = save("explain_faithfulness", {"model": str(bundle.path), "faithfulness": rows, "completeness": completeness})
    columns = ["method", "baseline", "k", "sentences", "top_mean", "top_median", "random_mean", "random_median"]
    print(table(rows, [*columns, "seconds_per_text"]))
    print(table(completeness, ["steps", "median_abs_error", "p95_abs_error", "max_abs_error", "within_tolerance"]))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
