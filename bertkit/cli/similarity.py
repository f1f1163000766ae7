"""`bertkit similarity`: cosine similarity of text pairs, or of every pair in a list."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import (
    BatchOption,
    DeviceOption,
    MaxLengthOption,
    ModelOption,
    PoolingOption,
    RuntimeOption,
    TextColumnOption,
    TrustOption,
)


def similarity(
    model: str = ModelOption,
    input: str = typer.Option(
        ..., "--input", "-i", help="Pairs (CSV/TSV/JSONL with two text columns), or a list of texts with --matrix."
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Where the scores go (stdout when absent)."),
    matrix: bool = typer.Option(False, "--matrix", help="Score every text of --input against every other."),
    heatmap: Path | None = typer.Option(None, "--heatmap", help="With --matrix: also draw the matrix to this PNG."),
    text_column: str = TextColumnOption,
    text_pair_column: str = typer.Option("text_pair", "--text-pair-column", help="Field of the second text of a pair."),
    pooling: str | None = PoolingOption,
    max_length: int | None = MaxLengthOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
) -> None:
    """Cosine similarity of text pairs (one score each), or of all pairs in a list (a matrix). A
    blank line or an empty text gets a null score."""
    from functools import partial

    from bertkit.embeddings.similarity import similarity_file
    from bertkit.tasks.embed.encoder import load_encoder

    load = partial(load_encoder, model, pooling, None, max_length, device, trust_remote_code, runtime)
    similarity_file(model, load, input, output, matrix, heatmap, (text_column, text_pair_column), batch_size)
