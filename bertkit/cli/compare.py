"""`bertkit compare`: several models scored on the same labelled data, with intervals and tests."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import (
    COUNT_LIMIT,
    BatchOption,
    ColumnsOption,
    DeviceOption,
    EncodingOption,
    MaxSamplesOption,
    SetOption,
    TrustOption,
    model_options,
)
from bertkit.core.seeds import MAX_SEED


def compare(
    models: list[str] | None = typer.Argument(None, help="Model bundles (or HF model directories) to compare."),
    data: str | None = typer.Option(
        None,
        "--data",
        "-d",
        help="Labelled file to score every model on (with --config: its test data by default, else its validation "
        "data).",
    ),
    output: str | None = typer.Option(
        None,
        "--output",
        "-o",
        help="Folder for report.md/.csv/.json/.png (default: compare-NAME, NAME the data file's; with --config: "
        "required, the models are trained into it).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output folder."),
    baseline: str | None = typer.Option(
        None, "--baseline", help="Add a baseline row: tfidf (TF-IDF + logistic regression; single-label classify)."
    ),
    baseline_train: str | None = typer.Option(
        None, "--baseline-train", help="The baseline's training file (default: the first model's own training data)."
    ),
    rounds: int = typer.Option(
        1000, "--bootstrap", min=100, max=COUNT_LIMIT, help="Bootstrap resamples for intervals and tests."
    ),
    seed: int = typer.Option(0, "--seed", min=0, max=MAX_SEED, help="Seed of the bootstrap resamples."),
    config: Path | None = typer.Option(
        None, "--config", "-c", help="Train each --model under this config first (one sub-folder each)."
    ),
    names: list[str] | None = typer.Option(None, "--model", "-m", help="With --config: a model to train (repeat)."),
    set_: list[str] | None = SetOption,
    data_format: str | None = typer.Option(None, "--format", help="csv, tsv, jsonl, json, parquet, folder or conll."),
    text_column: str | None = typer.Option(None, "--text-column", help="Text field (default: the models')."),
    text_pair_column: str | None = typer.Option(None, "--text-pair-column", help="Second-text field for pairs."),
    label_column: str | None = typer.Option(None, "--label-column", help="Label field (default: the models')."),
    columns: str | None = ColumnsOption,
    max_samples: int | None = MaxSamplesOption,
    encoding: str = EncodingOption,
    batch_size: int = BatchOption,
    device: str | None = DeviceOption,
    trust_remote_code: bool = TrustOption,
) -> None:
    """Score models on the same data: each metric with a 95% bootstrap interval, every pair of
    models tested (McNemar for accuracy, paired bootstrap for the rest); writes report.md,
    report.csv, report.json and report.png."""
    from bertkit.comparison import compare_models
    from bertkit.core.errors import BertkitError

    options = model_options(
        "evaluate", text_column, text_pair_column, batch_size, columns, encoding,
        label_column=label_column, data_format=data_format, max_samples=max_samples,
    )  # fmt: skip
    common = dict(baseline=baseline, baseline_train=baseline_train, rounds=rounds, seed=seed, device=device,
                  trust_remote_code=trust_remote_code, options=options)  # fmt: skip
    if config is not None:
        if models:
            raise BertkitError("give bundles to compare, or --config with --model NAME to train them; not both")
        if not output:
            raise BertkitError("--config: give --output DIR, the folder the models are trained into")
        comparison, target, which = _train_then_compare(config, names or [], set_, output, data, overwrite, common)
    else:
        if names:
            raise BertkitError("--model NAME is for training with --config; to compare bundles, list their folders")
        if data is None:
            raise BertkitError("give --data FILE, the labelled data to score the models on")
        comparison, target = compare_models(models or [], data, output, overwrite, **common)
        which = data
    _show(comparison, target, which)


def _train_then_compare(config: Path, names: list[str], sets, output: str, data, overwrite: bool, common: dict):
    from bertkit.comparison import model_dir_name
    from bertkit.comparison.trained import train_and_compare
    from bertkit.config import load_config
    from bertkit.core.errors import BertkitError

    if len(names) + (1 if common["baseline"] else 0) < 2:
        raise BertkitError("--config: give two or more --model NAME (or one with --baseline tfidf)")
    folders = [model_dir_name(n) for n in names]
    if len(set(folders)) < len(folders):
        raise BertkitError(f"--model: two models would share a folder ({', '.join(folders)}); give distinct ones")
    extra = {"model.trust_remote_code": True} if common["trust_remote_code"] else {}
    configs = {
        name: load_config(config, sets, **{"model.name": name, **extra}, output_dir=str(Path(output) / folder))
        for name, folder in zip(names, folders, strict=True)
    }
    return train_and_compare(configs, output, data, overwrite, protect=[config], **common)


def _show(comparison, target, which: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from bertkit.comparison.report import cell, digits, human_count, size_cell, verdict
    from bertkit.core.progress import console

    places = digits(comparison)
    table = Table(title=f"{comparison.examples} examples ({which}), 95% intervals")
    table.add_column("")  # one column per model: a terminal is narrower than the metrics are many
    for r in comparison.rows:
        table.add_column(r.name, justify="right", overflow="fold")
    for m in comparison.metrics:
        table.add_row(m, *(cell(r.scores[m], *comparison.intervals[r.name][m], places) for r in comparison.rows))
    table.add_row("parameters", *(human_count(r.parameters) for r in comparison.rows))
    table.add_row("size", *(size_cell(r) for r in comparison.rows))
    table.add_row("texts/s", *(f"{r.texts_per_second:.0f}" for r in comparison.rows))
    shown = Console()  # the result on stdout, as `evaluate` prints its scores
    shown.print(table)
    for r in comparison.rows:
        if r.note:
            shown.print(f"{r.name}: {r.note}", markup=False)
    shown.print(verdict(comparison).replace("**", ""))
    console.print(f"[green]report written to[/green] {target}/report.md (.csv, .json, .png)")
