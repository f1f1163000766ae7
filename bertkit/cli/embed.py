"""`bertkit embed`: one sentence vector per input text."""

from __future__ import annotations

import typer

from bertkit.cli.options import (
    BatchOption,
    DeviceOption,
    MaxLengthOption,
    ModelOption,
    NormalizeOption,
    PoolingOption,
    PrecisionOption,
    RuntimeOption,
    TextColumnOption,
    TrustOption,
)


def embed(
    model: str = ModelOption,
    input: str = typer.Option(..., "--input", "-i", help="Text lines, CSV/TSV/JSONL/JSON/Parquet, or - for stdin."),
    output: str = typer.Option(..., "--output", "-o", help="vectors.npy, vectors.parquet or vectors.jsonl."),
    pooling: str | None = PoolingOption,
    normalize: bool | None = NormalizeOption,
    max_length: int | None = MaxLengthOption,
    text_column: str = TextColumnOption,
    input_format: str | None = typer.Option(None, "--input-format", help="When the extension does not say."),
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    precision: str = PrecisionOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
) -> None:
    """Write one sentence vector per input text, in input order (a blank line gets a zero vector)."""
    from bertkit.core.adapters.base import bundle_inputs
    from bertkit.core.outputs import check_output_file
    from bertkit.core.progress import console
    from bertkit.embeddings.embed import embed_file, vector_format
    from bertkit.tasks.embed.encoder import load_encoder

    vector_format(output)  # a bad extension fails before the model loads
    check_output_file(output, input, *bundle_inputs(model))
    encoder = load_encoder(
        model, pooling, normalize, max_length, device, trust_remote_code, runtime, precision=precision
    )
    count = embed_file(encoder, input, output, input_format, text_column, batch_size)
    from bertkit.core.sharding import is_main

    if not is_main():  # under a launcher, process 0 speaks for all
        return
    s = encoder.settings
    console.print(
        f"[green]{count:,} vectors of {encoder.dimension} written to[/green] {output} "
        f"(pooling {s.pooling}, {'normalised' if s.normalize else 'not normalised'}, settings from {s.origin})"
    )
