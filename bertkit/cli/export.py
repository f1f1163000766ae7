"""`bertkit export`: a trained bundle as an ONNX bundle (fp32 or int8), checked before it is kept."""

from __future__ import annotations

import typer

from bertkit.cli.options import TrustOption


def export(
    model: str = typer.Option(..., "--model", "-m", help="The bundle to export (written by `bertkit train`)."),
    fmt: str = typer.Option("onnx", "--format", "-f", help="The format to export to: onnx."),
    quantize: str | None = typer.Option(
        None,
        "--quantize",
        help="int8: static int8, calibrated on the bundle's data (smaller, faster on CPU; checked on data).",
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="The new bundle's directory (default: <model>-onnx, or <model>-onnx-int8)."
    ),
    check_data: str | None = typer.Option(
        None,
        "--check-data",
        help="Labelled file to calibrate and check int8 on (default: the validation file the bundle's config names, "
        "else its test file, else its training file).",
    ),
    min_agreement: float = typer.Option(
        0.99,
        "--min-agreement",
        min=0,
        max=1,
        help="int8: publish only when its predictions equal fp32's on at least this share of the check data "
        "(embed: vectors at cosine 0.99 or more).",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an earlier export of this bundle."),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Export a bundle to ONNX; `predict`, `evaluate`, `embed`, `similarity` and `search` run the
    result with onnxruntime and no torch. The export checks itself: fp32 outputs against PyTorch's,
    and int8 predictions and the main metric against fp32 on a sample of the bundle's data."""
    from rich.table import Table

    from bertkit.core.progress import console
    from bertkit.exporting.onnx import export_bundle, summary_rows

    target, record = export_bundle(
        model, fmt, quantize, output, overwrite, check_data, trust_remote_code, min_agreement
    )  # fmt: skip
    table = Table(title="export check", show_header=False)
    for name, value in summary_rows(record):
        table.add_row(name, value)
    console.print(table)
    for note in record["check"]["notes"]:
        colour = "yellow" if note.startswith("warning") else "dim"
        console.print(f"[{colour}]{note}[/{colour}]")
    console.print(f"[green]ONNX bundle ({record['precision']}) written to[/green] {target}")
