"""`bertkit select`: the texts of an unlabelled pool to label next."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import COUNT_LIMIT, BatchOption, EncodingOption

SHOWN = 15  # picks in the terminal's table; the output file has them all


def select(
    model: str = typer.Option(..., "--model", "-m", help="A trained classify or ner bundle."),
    pool: str = typer.Option(..., "--input", "-i", help="The unlabelled texts: a text file (one a line), CSV, TSV, "
                             "JSON lines, JSON or Parquet."),  # fmt: skip
    output: str = typer.Option(..., "--output", "-o", help="Where the picks go: .csv, .tsv or .jsonl (the pool's "
                               "fields, the label field empty)."),  # fmt: skip
    count: int = typer.Option(32, "--count", "-n", min=1, max=COUNT_LIMIT, help="How many texts to pick."),
    strategy: str = typer.Option(
        "margin-clusters", "--strategy",
        help="margin-clusters (the default: the most unsure text of each of N clusters of the sentence "
        "vectors), margin, least-confidence, entropy, or random.",
    ),  # fmt: skip
    exclude: list[str] | None = typer.Option(
        None, "--exclude", help="A labelled file whose texts are never picked (repeatable); the model's own "
        "training, validation and test data always are left out.",
    ),  # fmt: skip
    seed: int = typer.Option(0, "--seed", help="Seed of k-means and of random picks."),
    input_format: str | None = typer.Option(None, "--input-format", help="The pool's format when the extension "
                                            "does not say it."),  # fmt: skip
    text_column: str | None = typer.Option(None, "--text-column", help="The pool's text field (default: the one "
                                           "the model was trained on)."),  # fmt: skip
    encoding: str = EncodingOption,
    batch_size: int = BatchOption,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output file."),
) -> None:
    """Pick the texts whose labels would teach the model most (active learning): the pool is
    scored by the model, texts already in its labelled data are left out, and the N most unsure
    (spread over the pool's kinds of text by default) are written with an empty label field,
    ready to label and append to the training data."""
    from bertkit.selection import SelectOptions
    from bertkit.selection import select as run_select

    options = SelectOptions(count, strategy, exclude or [], seed, batch_size, input_format, text_column, encoding,
                            overwrite)  # fmt: skip
    found = run_select(model, pool, output, options)
    _show(found, output, strategy)


def _show(found, output: str, strategy: str) -> None:
    from rich.console import Console
    from rich.table import Table

    from bertkit.core.progress import console
    from bertkit.selection.run import left_out

    table = Table(title=f"{len(found.picks):,} of {found.candidates:,} texts picked by {strategy}, most unsure first")
    for name in ("rank", "where", "text", "uncertainty"):
        table.add_column(name, justify="right" if name in ("rank", "uncertainty") else "left", overflow="fold")
    for pick in found.picks[:SHOWN]:
        text = pick["text"] if len(pick["text"]) <= 70 else pick["text"][:67] + "..."
        table.add_row(str(pick["rank"]), Path(pick["where"]).name, text, f"{pick['uncertainty']:.3f}")
    Console().print(table)  # to stdout: the result
    console.print(f"left out: {left_out(found)}")
    console.print(f"[green]picks written to[/green] {output}: label them, then add them to the training data")
