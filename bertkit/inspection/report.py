"""Showing an inspection: tables for a person, JSON under stable keys for a script, plots."""

from __future__ import annotations

from pathlib import Path

from bertkit.core import plots
from bertkit.core.outputs import atomic_path, ensure_folder
from bertkit.core.outputs.strict_json import dumps, undefined_as_null


def as_json(report: dict) -> str:
    """The report as strict JSON: a number that the data leaves undefined is null (`strict_json`)."""

    shown = undefined_as_null({k: v for k, v in report.items() if not k.startswith("_")})
    return dumps(shown, "the inspection report", ensure_ascii=False, indent=2)


def write_plots(report: dict, folder: Path) -> list[Path]:
    """A length histogram and a label chart in `folder` (each written whole or not at all)."""

    ensure_folder(folder, folder)
    written = []
    drawings = []
    if report.get("_lengths"):
        drawings.append(("lengths.png", lambda p: plots.length_histogram(report["_lengths"], report["max_length"], p)))
    if report.get("labels"):
        drawings.append(("labels.png", lambda p: plots.label_bars(report["labels"], p)))
    for name, draw in drawings:
        with atomic_path(folder / name) as tmp:
            draw(tmp)
        written.append(folder / name)
    return written


def show(report: dict, console) -> None:
    """The report as a person reads it: splits, overlap, labels, lengths, then the verdict."""
    from rich.table import Table

    if report["splits"]:
        table = Table(title=f"{report['task']} data", title_justify="left")
        for column in ("split", "examples", "empty", "duplicates", "normalised dup."):
            table.add_column(column, justify="right" if column != "split" else "left")
        for role, numbers in report["splits"].items():
            table.add_row(
                role + (" (from train)" if role == "validation" and report["validation_from_train"] else ""),
                f"{numbers['examples']:,}",
                str(numbers["empty"]),
                str(numbers["duplicates"]),
                str(numbers["duplicates_normalised"]),
            )
        console.print(table)
    if report["overlap"]:
        shared = ", ".join(f"{k.replace('__', ' & ')}: {v}" for k, v in report["overlap"].items())
        console.print(f"texts in two splits: {shared}")
    if report["labels"]:
        table = Table(title="labels", title_justify="left")
        roles = list(report["labels"])
        table.add_column("label")
        for role in roles:
            table.add_column(role, justify="right")
        names = list(dict.fromkeys(label for counts in report["labels"].values() for label in counts))
        for label in names[:30]:
            table.add_row(label, *(str(report["labels"][role].get(label, 0)) for role in roles))
        if len(names) > 30:
            table.add_row(f"... {len(names) - 30} more", *("" for _ in roles))
        console.print(table)
    if "length" in report:
        tokens = report["length"]["tokens"]
        console.print(
            f"length in tokens: median {tokens['p50']}, p90 {tokens['p90']}, p99 {tokens['p99']}, longest "
            f"{tokens['max']}; {report['length']['over_max_length_share']:.1%} over model.max_length "
            f"({report['max_length']})"
        )
        console.print(f"unknown tokens: {report['tokens']['unknown_rate']:.2%}")
    for key, value in (report.get("checks") or {}).items():
        console.print(f"{key.replace('_', ' ')}: {value}")
    for warning in report["warnings"]:
        console.print(f"[yellow]warning:[/yellow] {warning}")
    for error in report["errors"]:
        console.print(f"[red]error:[/red] {error}")
    verdict = {
        "ok": "[green]ok[/green]: nothing to look at; training would run",
        "warnings": f"[yellow]{len(report['warnings'])} warning(s)[/yellow]: training would run, but look first",
        "errors": "[red]training would not run[/red]: fix the error(s) above",
    }[report["verdict"]]
    console.print(verdict)
