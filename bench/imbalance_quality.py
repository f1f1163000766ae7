"""Imbalanced data: macro F1 with and without class weights / focal loss, same budget (bench, not CI).

Each data set is trained four times from the packaged MiniLM at max_length 64, batch 16, lr 5e-5,
seed 42, with the same steps: `none` (cross-entropy), `balanced` (class_weights: balanced),
`focal` (loss: focal, gamma 2), `both` (focal with balanced weights as its alpha).

  sst2:     SST-2 train subsampled to 9:1 (900 positive, 100 negative), 1 epoch (63 steps),
            scored on the whole dev set (872, balanced). Macro F1 and the negative class's recall.
  livedoor: livedoor news (9 categories, title + start of the body), subsampled with a skew
            (160, 80, 40, 20, 12, 12, 12, 12, 12 examples), 3 epochs (69 steps), scored on the
            whole dev set (737). MiniLM's vocabulary is English: it reads the kanji and kana as
            characters, so the absolute numbers are low; the comparison is what matters.
  conll:    CoNLL-2003 NER, the first 1,000 sentences of eng.train (tags naturally skewed: O is
            ~83% of tokens, MISC the rarest type), 1 epoch (63 steps), scored on the first 400
            sentences of eng.testa. Macro F1 = the mean of the four entity types' F1.

Usage: python bench/imbalance_quality.py [sst2] [livedoor] [conll] [--seeds 42,43]
Writes bench/results/imbalance_quality.json after every run and prints a table.
"""

from __future__ import annotations

import gzip
import json
import statistics
import sys
import tempfile
from pathlib import Path

from common import DATA, minilm_path, require, save, table

SETTINGS = {
    "none": [],
    "balanced": ["{t}.class_weights=balanced"],
    "focal": ["{t}.loss=focal"],
    "both": ["{t}.class_weights=balanced", "{t}.loss=focal"],
}
COMMON = ["model.max_length=64", "train.batch_size=16", "train.learning_rate=5.0e-5", "train.eval_strategy=no"]


def sst2(folder: Path) -> tuple[str, list[str], callable]:
    rows = require(DATA / "en/sst2/train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    pos = [r for r in rows if r.endswith("\t1")][:900]
    neg = [r for r in rows if r.endswith("\t0")][:100]
    train = folder / "sst2_train.tsv"
    train.write_text("text\tlabel\n" + "\n".join(pos + neg) + "\n", encoding="utf-8")
    sets = [f"data.train={train}", f"data.validation={DATA / 'en/sst2/dev.tsv'}", "train.epochs=1"]
    return "classify", sets, lambda s: {"macro_f1": s["f1_macro"], "rare_recall": s["per_class"]["0"]["recall"]}


def livedoor(folder: Path) -> tuple[str, list[str], callable]:
    sizes = [160, 80, 40, 20, 12, 12, 12, 12, 12]

    def records(name: str) -> list[dict]:
        with gzip.open(require(DATA / f"ja/livedoor/{name}.jsonl.gz"), "rt", encoding="utf-8") as handle:
            return [json.loads(line) for line in handle]

    train = records("train")
    categories = sorted({r["category"] for r in train})
    chosen = [r for c, n in zip(categories, sizes, strict=True) for r in [x for x in train if x["category"] == c][:n]]
    paths = {}
    for role, rows in (("train", chosen), ("dev", records("dev"))):
        paths[role] = folder / f"livedoor_{role}.jsonl"
        with open(paths[role], "w", encoding="utf-8") as handle:
            for r in rows:
                handle.write(json.dumps({"text": r["title"] + " " + r["body"][:120], "label": r["category"]}) + "\n")
    rarest = categories[-1]
    sets = [f"data.train={paths['train']}", f"data.validation={paths['dev']}", "train.epochs=3"]
    return "classify", sets, lambda s: {"macro_f1": s["f1_macro"], "rare_recall": s["per_class"][rarest]["recall"]}


def conll(folder: Path) -> tuple[str, list[str], callable]:
    def first(path: Path, n: int) -> str:
        sentences = [s for s in require(path).read_text(encoding="utf-8").split("\n\n") if "-DOCSTART-" not in s]
        return "\n\n".join(s.strip("\n") for s in sentences[:n]) + "\n"

    train, dev = folder / "conll_train.conll", folder / "conll_dev.conll"
    train.write_text(first(DATA / "en/conll2003/eng.train", 1000), encoding="utf-8")
    dev.write_text(first(DATA / "en/conll2003/eng.testa", 400), encoding="utf-8")
    sets = [f"data.train={train}", f"data.validation={dev}", "train.epochs=1", "ner.token_column=0", "ner.tag_column=3"]

    def numbers(s: dict) -> dict:
        types = s["per_type"]
        return {
            "macro_f1": statistics.mean(v["f1"] for v in types.values()),
            "micro_f1": s["f1"],
            "rare_recall": types.get("MISC", {}).get("recall"),
        }

    return "ner", sets, numbers


DATASETS = {"sst2": sst2, "livedoor": livedoor, "conll": conll}


def main() -> None:
    from bertkit import training
    from bertkit.config import load_config

    args = sys.argv[1:]
    seeds = [42]
    if "--seeds" in args:
        at = args.index("--seeds")
        seeds = [int(s) for s in args[at + 1].split(",")]
        del args[at : at + 2]
    names = args or list(DATASETS)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for name in names:
            task, sets, numbers = DATASETS[name](folder)
            for setting, extra in SETTINGS.items():
                for seed in seeds:
                    cfg = load_config(
                        None,
                        [f"task={task}", f"model.name={minilm_path()}", *COMMON, *sets, f"train.seed={seed}",
                         f"output_dir={folder / 'model'}", *[e.format(t=task if task == 'ner' else 'classify')
                                                             for e in extra]],
                    )  # fmt: skip
                    _, scores = training.train(cfg, overwrite=True)
                    info = json.loads((folder / "model" / "bertkit.json").read_text())
                    row = {"data": name, "setting": setting, "seed": seed, **numbers(scores["validation"])}
                    row["steps"] = info["training"]["train_steps"]
                    row["train_seconds"] = info["training"]["train_seconds"]
                    rows.append(row)
                    print(json.dumps(row), flush=True)
                    save("imbalance_quality", {"rows": rows, "medians": medians(rows)})
    print(table(medians(rows), ["data", "setting", "macro_f1", "rare_recall", "micro_f1", "steps", "seeds"]))


def medians(rows: list[dict]) -> list[dict]:
    out = []
    for key in dict.fromkeys((r["data"], r["setting"]) for r in rows):
        mine = [r for r in rows if (r["data"], r["setting"]) == key]
        row = {"data": key[0], "setting": key[1], "steps": mine[0]["steps"], "seeds": len(mine)}
        for metric in ("macro_f1", "rare_recall", "micro_f1"):
            values = [r[metric] for r in mine if r.get(metric) is not None]
            if values:
                row[metric] = round(statistics.median(values), 4)
        out.append(row)
    return out


if __name__ == "__main__":
    main()
