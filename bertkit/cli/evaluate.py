"""`bertkit evaluate`: score a trained model on a labelled data set."""

from __future__ import annotations

import math

import typer

from bertkit.cli.options import (
    BatchOption,
    ColumnsOption,
    DeviceOption,
    EncodingOption,
    MaxSamplesOption,
    PrecisionOption,
    RuntimeOption,
    TrustOption,
    model_options,
)


def evaluate(
    model: str = typer.Option(..., "--model", "-m", help="Model bundle (or any HF model directory)."),
    data: str = typer.Option(
        ...,
        "--data",
        "-d",
        help="Labelled file: CSV, TSV, JSONL, JSON, Parquet, CoNLL, SQuAD JSON, or a class-per-folder directory.",
    ),
    output_dir: str | None = typer.Option(
        None, "--output-dir", "-o", help="Where metrics.json and plots go (default: MODEL/eval-NAME)."
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory."),
    data_format: str | None = typer.Option(
        None, "--format", help="csv, tsv, jsonl, json, parquet, folder or conll, when the extension does not say."
    ),
    text_column: str | None = typer.Option(
        None, "--text-column", help="Text field (default: the one the model was trained on)."
    ),
    text_pair_column: str | None = typer.Option(None, "--text-pair-column", help="Second-text field for pairs."),
    label_column: str | None = typer.Option(
        None, "--label-column", help="Label field (default: the one the model was trained on)."
    ),
    columns: str | None = ColumnsOption,
    max_samples: int | None = MaxSamplesOption,
    encoding: str = EncodingOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    precision: str = PrecisionOption,
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
) -> None:
    """Score a trained model on a labelled data set; writes metrics.json and plots."""
    from bertkit.evaluation import evaluate_file

    scores, target = evaluate_file(
        model,
        data,
        output_dir,
        overwrite,
        device,
        trust_remote_code=trust_remote_code,
        runtime=runtime,
        precision=precision,
        options=model_options(
            "evaluate", text_column, text_pair_column, batch_size, columns, encoding,
            label_column=label_column, data_format=data_format, max_samples=max_samples,
        ),  # fmt: skip
    )
    from bertkit.core.outputs import json_line
    from bertkit.core.sharding import is_main

    if not is_main():  # under a launcher, process 0 speaks for all
        return
    # the headline numbers as one JSON object on standard output (metrics.json has them all), so a
    # script reads them as a person does; the message about the files goes to standard error
    headline = {k: round(v, 4) if math.isfinite(v) else None for k, v in scores.items() if isinstance(v, float)}
    print(json_line(headline), flush=True)
    from bertkit.core.progress import console

    written = sorted(p.name for p in target.iterdir() if not p.name.startswith("."))  # not bertkit's manifest
    console.print(f"[green]metrics written to[/green] {target} ({', '.join(written)})")
