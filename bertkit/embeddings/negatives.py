"""`bertkit mine-negatives`: hard negatives for (anchor, positive) pairs. The corpus is embedded
(and cached) as `bertkit search` does; for each pair the corpus is ranked by cosine to the
anchor, and the best-ranked texts that are not the positive become its negatives, unless they
score so close to the positive that they are likely unlabelled positives (false negatives)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bertkit.core.adapters.base import bundle_inputs
from bertkit.core.data.readers import located_records
from bertkit.core.data.records import blank, text_value
from bertkit.core.errors import BertkitError
from bertkit.core.outputs import RecordWriter, atomic_text, check_cache_dir, check_output_file
from bertkit.core.pooling import unit_vectors
from bertkit.core.progress import bar, status
from bertkit.embeddings.search import corpus_vectors, top_hits

FIELD = "negatives"  # the field each output row gains; `train embed` reads it as data.negative_column
CHUNK = 1024  # pairs encoded and ranked at a time: the progress bar's step, and a bound on the score matrix


@dataclass(frozen=True)
class MineOptions:
    # 3 negatives, ranks 0-50 and a ceiling of 95% of the positive's score: sentence-transformers'
    # mine_hard_negatives defaults to 3 negatives, its documented examples draw from the top 50
    # with relative_margin=0.05, the ceiling NV-Retriever (Moreira et al. 2024, "TopK-PercPos")
    # found best at removing false negatives; docs/embed.md has what it skipped on SQuAD
    num_negatives: int = 3
    range_min: int = 0
    range_max: int = 50
    margin: float | None = None
    max_score_ratio: float | None = None
    text_column: str = "text"
    text_pair_column: str = "text_pair"
    corpus_column: str = "text"
    batch_size: int = 32

    def check(self) -> MineOptions:
        if self.num_negatives < 1:
            raise BertkitError(f"--num-negatives {self.num_negatives}: give 1 or more")
        if not 0 <= self.range_min < self.range_max:
            raise BertkitError(
                f"--range-min {self.range_min} --range-max {self.range_max}: the ranks run from --range-min "
                "(0 or more) up to, not including, --range-max, which must be larger"
            )
        if self.margin is not None and self.max_score_ratio is not None:
            raise BertkitError("give --margin or --max-score-ratio, not both: they are two ways of one ceiling")
        if self.max_score_ratio is not None and self.max_score_ratio <= 0:
            raise BertkitError(
                f"--max-score-ratio {self.max_score_ratio}: give a share of the positive's score, e.g. 0.95"
            )
        return self

    def ceiling(self, positive: np.ndarray) -> np.ndarray:
        """The highest score a negative may have, per pair: the positive's score less the margin,
        or a share of it (0.95 of it when neither is given)."""
        if self.margin is not None:
            return positive - self.margin
        return positive * (0.95 if self.max_score_ratio is None else self.max_score_ratio)


@dataclass
class Mined:
    pairs: int = 0
    negatives: int = 0
    short: int = 0  # pairs that got fewer negatives than asked
    skipped: int = 0  # candidates above the ceiling: likely false negatives
    corpus: int = 0
    cached: bool = False


def read_pairs(path: str, options: MineOptions) -> list[tuple[str, dict]]:
    """(where, record) of every pair, each with a non-blank anchor and positive."""

    rows = []
    for where, record in located_records(path, None, options.text_column):
        record = {k: v for k, v in record.items() if k != "where"}  # SQuAD records carry their place
        named = ((options.text_column, "--text-column"), (options.text_pair_column, "--text-pair-column"))
        for column, option in named:
            if column not in record:
                raise BertkitError(
                    f"{where}: no '{column}' field (fields: {', '.join(record)}); name it with {option}"
                )
            if blank(text_value(record[column], where, column)):
                raise BertkitError(f"{where}: '{column}' is empty; every pair needs both texts")
        if FIELD in record:
            raise BertkitError(
                f"{where}: the pair already has a '{FIELD}' field, which the output would replace; "
                "drop it (or mine from the original pairs)"
            )
        rows.append((where, record))
    if not rows:
        raise BertkitError(f"{path}: no pairs in it")
    return rows


def mine(encoder, rows: list[dict], texts: list[str], vectors: np.ndarray, options: MineOptions, summary: Mined):
    """Each row with its negatives (a list of corpus texts, best-ranked first)."""

    anchors = [str(r[options.text_column]).strip() for r in rows]
    positives = [str(r[options.text_pair_column]).strip() for r in rows]
    asked = unit_vectors(encoder, anchors, options.batch_size)
    own = (asked * unit_vectors(encoder, positives, options.batch_size)).sum(axis=1)
    index, score = top_hits(asked, vectors, options.range_max, skip=np.array([not t for t in texts]))
    ceiling = options.ceiling(own)
    for r, row in enumerate(rows):
        chosen: list[str] = []
        for i, s in zip(index[r, options.range_min :], score[r, options.range_min :], strict=True):
            text = texts[i]
            if text in (positives[r], anchors[r]) or text in chosen:
                continue
            if s > ceiling[r]:
                summary.skipped += 1
                continue
            chosen.append(text)
            if len(chosen) == options.num_negatives:
                break
        summary.pairs += 1
        summary.negatives += len(chosen)
        summary.short += len(chosen) < options.num_negatives
        yield {**row, FIELD: chosen}


def mine_file(
    model: str,
    load: Callable,
    pairs: str,
    corpus: str | None,
    output: str,
    options: MineOptions,
    overwrite: bool,
    cache_dir: Path | None,
) -> Mined:
    """Mine negatives for every pair of `pairs` from `corpus` (the pairs' distinct positives
    when None) and write the rows, with `negatives`, as JSON lines to `output`. Every check that
    can fail is made before the model loads."""

    options.check()
    read = [pairs, corpus, *bundle_inputs(model)]  # an adapter bundle's base too
    check_output_file(output, *read, replace=overwrite, example="triplets.jsonl")
    check_cache_dir(cache_dir, *read)
    located = read_pairs(pairs, options)
    summary = Mined()
    with atomic_text(output) as handle:
        encoder = load()
        texts, vectors = _corpus(encoder, corpus, [r for _, r in located], options, cache_dir, summary)
        with RecordWriter(handle, "jsonl") as writer, bar("mining hard negatives", len(located)) as progress:
            for rows in _chunks([r for _, r in located]):
                for record in mine(encoder, rows, texts, vectors, options, summary):
                    writer.write(record)
                progress.advance(progress.task_ids[0], len(rows))
    encoder.report_truncation()
    return summary


def _corpus(encoder, corpus: str | None, rows: list[dict], options: MineOptions, cache_dir, summary: Mined):

    if corpus is not None:
        found = corpus_vectors(encoder, corpus, options.corpus_column, cache_dir, options.batch_size)
        texts, vectors, summary.cached = found
    else:
        texts = list(dict.fromkeys(str(r[options.text_pair_column]).strip() for r in rows))
        with status(f"embedding the {len(texts):,} distinct positives as the corpus"):
            vectors = unit_vectors(encoder, texts, options.batch_size)
    summary.corpus = sum(1 for t in texts if t)
    return texts, vectors


def _chunks(rows: list[dict]) -> Iterator[list[dict]]:
    for start in range(0, len(rows), CHUNK):
        yield rows[start : start + CHUNK]
