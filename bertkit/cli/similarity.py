"""`bertkit similarity`: cosine similarity of text pairs, or of every pair in a list."""

from __future__ import annotations

import contextlib
from pathlib import Path

import typer

from bertkit.cli.options import (
    BatchOption,
    DeviceOption,
    MaxLengthOption,
    ModelOption,
    PoolingOption,
    TextColumnOption,
    TrustOption,
)
from bertkit.errors import BertkitError


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
) -> None:
    """Cosine similarity of text pairs (one score each), or of all pairs in a list (a matrix). A
    blank line or an empty text gets a null score."""
    from bertkit.data.readers import Blank, located_records, placed
    from bertkit.embeddings.encoder import load_encoder
    from bertkit.embeddings.search import heatmap as draw
    from bertkit.embeddings.search import similarity_rows
    from bertkit.outputs import RecordWriter, atomic_path, atomic_text, check_output_file
    from bertkit.prediction import output_format

    if heatmap is not None and not matrix:
        raise BertkitError("--heatmap draws a --matrix; add --matrix")
    check_output_file(output, input, model)
    if heatmap is not None:
        check_output_file(str(heatmap), input, model)
    records = [placed(w, r) for w, r in located_records(input, text_column=text_column, keep_blank=True)]
    if not records:
        raise BertkitError(f"{input}: no texts in it (the file is empty)")
    needed = [text_column] if matrix else [text_column, text_pair_column]
    for number, record in enumerate(records, start=1):
        missing = [c for c in needed if c not in record and not isinstance(record, Blank)]
        if missing:
            hint = "" if matrix else " (for a matrix of one list of texts, add --matrix)"
            raise BertkitError(
                f"{record.where}: record {number} has no '{missing[0]}' field (fields: {', '.join(record)}); "
                f"set --text-column / --text-pair-column{hint}"
            )
    with atomic_text(output) as handle, contextlib.ExitStack() as stack:
        picture = stack.enter_context(atomic_path(heatmap)) if heatmap is not None else None
        encoder = load_encoder(model, pooling, None, max_length, device, trust_remote_code)
        rows, scores = similarity_rows(encoder, records, matrix, (text_column, text_pair_column), batch_size)
        if picture is not None:
            draw(scores, [r["text"] for r in rows], picture)
        with RecordWriter(handle, output_format(output, None)) as writer:
            for row in rows:
                writer.write(row)
    encoder.report_truncation()
