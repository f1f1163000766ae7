"""`bertkit predict`: run a trained model on texts, one result per input record."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import (
    COUNT_LIMIT,
    ColumnsOption,
    EncodingOption,
    PrecisionOption,
    RuntimeOption,
    TrustOption,
    model_options,
)
from bertkit.core.errors import BertkitError


def predict(
    model: str = typer.Option(..., "--model", "-m", help="Model bundle (or any HF model directory)."),
    input: str | None = typer.Option(
        None,
        "--input",
        "-i",
        help="Text lines, CSV/TSV/JSONL/JSON/Parquet, CoNLL or SQuAD JSON file, or - for stdin.",
    ),
    output: str | None = typer.Option(None, "--output", "-o", help="Where to write results (stdout when absent)."),
    format: str | None = typer.Option(
        None,
        "--format",
        "-f",
        help="jsonl, csv, tsv, conll or squad (default: from --output's extension; else conll for CoNLL input and "
        "squad for SQuAD input; else jsonl).",
    ),
    input_format: str | None = typer.Option(
        None, "--input-format", help="text, csv, tsv, jsonl, json, parquet or conll, when the extension does not say."
    ),
    text_column: str | None = typer.Option(
        None, "--text-column", help="Field holding the text (default: the one the model was trained on)."
    ),
    text_pair_column: str | None = typer.Option(
        None, "--text-pair-column", help="Field holding the second text of a pair."
    ),
    columns: str | None = ColumnsOption,
    encoding: str = EncodingOption,
    batch_size: int = typer.Option(32, "--batch-size", "-b", min=1, max=COUNT_LIMIT, help="Texts per forward pass."),
    long_text: str = typer.Option(
        "truncate", "--long-text", help="truncate: cut as in training; windows: score overlapping windows and average."
    ),
    stride: int | None = typer.Option(
        None,
        "--stride",
        min=0,
        help="Tokens shared by consecutive windows (--long-text windows; default: a quarter of a window).",
    ),
    threshold: float | None = typer.Option(
        None, "--threshold", help="Multi-label: score above which a label is on (default: the model's)."
    ),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda, cuda:1, ... (default: a GPU if there is one)."
    ),
    precision: str = PrecisionOption,
    question: str | None = typer.Option(
        None, "--question", "-q", help="QA: ask this question of --context-file (instead of --input)."
    ),
    context_file: Path | None = typer.Option(
        None, "--context-file", help="QA: a UTF-8 text file of any length to find the --question's answer in."
    ),
    n_best: int = typer.Option(
        0, "--n-best", min=0, help="QA: also list up to this many other answers (never the answer itself; each once)."
    ),
    top_k: int | None = typer.Option(
        None, "--top-k", min=1, help="Fill-mask: candidates per [MASK] (default: the model's, 5)."
    ),
    trust_remote_code: bool = TrustOption,
    runtime: str = RuntimeOption,
) -> None:
    """Run a trained model on texts; one result per input line or record, in input order (a blank
    line gets an empty result)."""
    if long_text not in ("truncate", "windows"):
        raise BertkitError("--long-text: use truncate or windows")
    from bertkit.prediction import asked_question, predict_file

    records = None
    if (question is None) != (context_file is None):
        raise BertkitError("--question and --context-file go together: give both, or neither and --input")
    if question is not None:
        if input is not None:
            raise BertkitError("give --input, or --question with --context-file, not both")
        records = asked_question(question, context_file)
        input = str(context_file)
    elif input is None:
        raise BertkitError("nothing to predict: give --input FILE (or - for stdin), or --question with --context-file")

    count = predict_file(
        model,
        input,
        output,
        format,
        input_format,
        device,
        records=records,
        trust_remote_code=trust_remote_code,
        runtime=runtime,
        precision=precision,
        options=model_options(
            "predict", text_column, text_pair_column, batch_size, columns, encoding,
            long_text=long_text, stride=stride, threshold=threshold, n_best=n_best, top_k=top_k,
        ),  # fmt: skip
    )
    from bertkit.core.sharding import is_main

    if output and is_main():  # under a launcher, process 0 speaks for all
        from bertkit.core.progress import console

        console.print(f"[green]{count:,} predictions written to[/green] {output}")
