"""Streamed masked-LM training (`data.streaming: true`): the training corpus is read lazily, a
batch of lines at a time, tokenized and cut into blocks as the Trainer asks for them, so memory
stays flat whatever the corpus size. A stream has no length, so training is bounded by
`train.max_steps`; when the corpus ends first, it is read again (a new epoch, reshuffled).

The validation text is held in memory: `data.validation` when given, else the first
`data.max_eval_samples` texts of the corpus (HELD_OUT when null), which training then skips.
"""

from __future__ import annotations

import itertools
from typing import TYPE_CHECKING

from bertkit.core.data import clean_text
from bertkit.core.data.corpus import load_corpus, read_lines
from bertkit.core.data.formats import Layout
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console
from bertkit.core.tokenization import wrap
from bertkit.tasks.mlm.settings import MlmConfig

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig

# Texts held out for validation when data.validation is not given: perplexity over ~1,000 lines
# (tens of thousands of masked tokens) varies by well under 1% between seeds, and evaluation
# stays a few seconds on a CPU.
HELD_OUT = 1000
# Lines tokenized together: datasets' default map batch, as in transformers' run_mlm.py. In
# blocks mode each batch's ragged end (less than one block) is dropped, as run_mlm.py does.
LINES_PER_BATCH = 1000
# Blocks mixed before they are drawn: datasets' default shuffle buffer. A buffer only shuffles
# locally; a corpus sorted by topic should be shuffled on disk first (docs/mlm-adapt.md).
SHUFFLE_BUFFER = 1000


def check(cfg: RunConfig) -> None:
    """What streaming needs, before anything is read."""
    data, source = cfg.data, cfg.data.train
    if not cfg.train.max_steps:
        raise BertkitError(
            "data.streaming: true needs train.max_steps: a streamed corpus has no length, so the number of "
            "training steps cannot come from train.epochs. Set e.g. --set train.max_steps=10000"
        )
    if source.hub or source.files or source.path == "-":
        raise BertkitError(f"data.streaming: {source.describe()}: streaming reads a local file, folder or glob")
    if cfg.section(MlmConfig).nsp:
        raise BertkitError("data.streaming: mlm.nsp pairs sentences across documents; it cannot stream. Turn one off")
    if cfg.section(MlmConfig).from_scratch and not cfg.model.tokenizer:
        raise BertkitError(
            "data.streaming with mlm.from_scratch needs a vocabulary first: learn one with `bertkit tokenizer "
            "train` and set model.tokenizer to it"
        )
    if cfg.train.group_by_length:
        raise BertkitError("data.streaming: train.group_by_length needs every length up front; turn it off")
    if data.max_train_samples and data.sample != "first":
        raise BertkitError(
            "data.streaming: data.max_train_samples can only take the first texts of a stream; set data.sample: first"
        )


def texts(path: str, column: str, fmt, layout, skip: int, strip_html: bool):
    """The corpus' texts, lazily (a generator datasets calls afresh for every pass)."""

    for text in itertools.islice(read_lines(path, column, fmt, layout=layout), skip, None):
        yield {"text": clean_text(text) if strip_html else text}


def load(cfg: RunConfig) -> dict:
    """The splits: train as a `datasets.IterableDataset` of texts, the others in memory."""
    import datasets


    check(cfg)
    data, source = cfg.data, cfg.data.train
    column, layout = data.text_column, Layout.of(source)
    splits, skip = {}, 0
    if data.validation is None:
        skip = data.max_eval_samples or HELD_OUT
        held = list(itertools.islice(read_lines(source.path, column, source.format, layout=layout), skip))
        if len(held) < skip:
            raise BertkitError(
                f"{source.describe()}: only {len(held)} texts, all needed to hold out {skip} for validation; "
                "give data.validation, or lower data.max_eval_samples"
            )
        console.print(f"validation: the first {skip:,} texts of {source.describe()} (training skips them)")
        splits["validation"] = datasets.Dataset.from_dict({"text": held})
    for role in ("validation", "test"):
        given = getattr(data, role)
        if given is not None:
            split = load_corpus(given, column)
            if data.max_eval_samples and len(split) > data.max_eval_samples:
                split = split.select(range(data.max_eval_samples))
            splits[role] = split
    if data.strip_html:
        splits = {role: s.map(lambda row: {"text": clean_text(row["text"])}) for role, s in splits.items()}
    kwargs = {"path": source.path, "column": column, "fmt": source.format, "layout": layout, "skip": skip}
    train = datasets.IterableDataset.from_generator(texts, gen_kwargs={**kwargs, "strip_html": data.strip_html})
    if data.max_train_samples:
        train = train.take(data.max_train_samples)
    return {"train": train, **splits}


def features(split, tokenizer, info: dict, make):
    """The streamed texts as shuffled model inputs; `make(tokenizer, texts, info, where, partial)`
    cuts a batch of texts into examples (the task's `examples`)."""

    columns = list(wrap(tokenizer, []))  # the same columns for every batch, even one too short for a block

    def batch(rows):
        made = make(tokenizer, rows["text"], info, "train", True)
        return {key: [row[key] for row in made] for key in columns}

    tokenized = split.map(batch, batched=True, batch_size=LINES_PER_BATCH, remove_columns=["text"])
    return tokenized.shuffle(seed=info["seed"], buffer_size=SHUFFLE_BUFFER)
