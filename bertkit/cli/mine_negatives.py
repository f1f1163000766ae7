"""`bertkit mine-negatives`: hard negatives for training pairs, from a corpus."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import (
    BatchOption,
    CacheDirOption,
    DeviceOption,
    MaxLengthOption,
    ModelOption,
    NoCacheOption,
    RuntimeOption,
    TrustOption,
)


def mine_negatives(
    model: str = ModelOption,
    pairs: str = typer.Option(..., "--pairs", help="(anchor, positive) pairs: JSONL, CSV, TSV, Parquet or SQuAD."),
    corpus: str | None = typer.Option(
        None, "--corpus", help="Where negatives come from: text lines, a folder or glob, or JSONL/CSV (default: the "
        "pairs' distinct positives).",
    ),
    output: str = typer.Option(..., "--output", "-o", help="triplets.jsonl: each pair with its `negatives`."),
    num_negatives: int = typer.Option(3, "--num-negatives", "-n", help="Negatives per pair (at most)."),
    range_min: int = typer.Option(0, "--range-min", help="Best corpus rank to take from (0: the top hit)."),
    range_max: int = typer.Option(50, "--range-max", help="Take only from ranks below this."),
    margin: float | None = typer.Option(
        None, "--margin", help="Skip a candidate scoring above the positive's score minus this."
    ),
    max_score_ratio: float | None = typer.Option(
        None, "--max-score-ratio", help="Skip a candidate scoring above this share of the positive's score "
        "(default 0.95 when --margin is not given).",
    ),
    text_column: str = typer.Option("text", "--text-column", help="The anchor's field."),
    text_pair_column: str = typer.Option("text_pair", "--text-pair-column", help="The positive's field."),
    corpus_column: str = typer.Option("text", "--corpus-column", help="The corpus's text field (JSONL/CSV)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file."),
    cache_dir: Path | None = CacheDirOption,
    no_cache: bool = NoCacheOption,
    max_length: int | None = MaxLengthOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
) -> None:
    """Find hard negatives: for each pair, the corpus texts ranked closest to the anchor that are
    not its positive, skipping those that score nearly as high as the positive (likely unlabelled
    positives). `train embed` reads the output with data.negative_column: negatives."""
    from functools import partial

    from bertkit.core.progress import console
    from bertkit.embeddings.negatives import MineOptions, mine_file
    from bertkit.embeddings.search import default_cache_dir
    from bertkit.tasks.embed.encoder import load_encoder

    options = MineOptions(
        num_negatives, range_min, range_max, margin, max_score_ratio, text_column, text_pair_column, corpus_column,
        batch_size,
    )
    cache = None if no_cache else (cache_dir or default_cache_dir())
    load = partial(load_encoder, model, None, None, max_length, device, trust_remote_code, runtime)
    done = mine_file(model, load, pairs, corpus, output, options, overwrite, cache)
    console.print(
        f"[green]{done.negatives:,} negatives for {done.pairs:,} pairs written to[/green] {output} "
        f"(corpus of {done.corpus:,} texts; {done.skipped:,} candidates skipped as likely false negatives; "
        f"{done.short:,} pairs got fewer than {num_negatives})"
    )
