"""`bertkit inspect`: look at a run's data before training (no model weights are loaded)."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import ConfigOption, SetOption


def inspect(
    config: Path = ConfigOption,
    sets: list[str] | None = SetOption,
    as_json: bool = typer.Option(False, "--json", help="Print the numbers as JSON (stable keys) instead of tables."),
    plots: Path | None = typer.Option(None, "--plots", help="Folder for a length histogram and a label chart (PNG)."),
) -> None:
    """Check a run's data before training: sizes, empty texts, duplicates, leakage between splits,
    labels, lengths in tokens, unknown characters, and the task's own checks. Exit code 0 when
    training would run, 2 when it would not."""
    from bertkit.config import load_config
    from bertkit.core.progress import console
    from bertkit.inspection import inspect_run
    from bertkit.inspection.report import as_json as to_json
    from bertkit.inspection.report import show, write_plots

    cfg = load_config(config, sets)
    if plots is not None:
        from bertkit.core.outputs import check_outside_inputs, check_writable
        from bertkit.tasks import get_task
        from bertkit.training import run_inputs

        check_outside_inputs(plots, run_inputs(cfg, get_task(cfg.task), [config]), "--plots")
        check_writable(plots / "lengths.png")
    report = inspect_run(cfg)
    if plots is not None:
        for path in write_plots(report, plots):
            console.print(f"[green]plot written to[/green] {path}")
    if as_json:
        typer.echo(to_json(report))
    else:
        show(report, console)
    if report["verdict"] == "errors":
        raise typer.Exit(2)
