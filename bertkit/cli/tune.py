"""`bertkit tune`: hyperparameter search over a config (Optuna), for every task."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import COUNT_LIMIT, ConfigOption, SetOption, TrustOption


def tune(
    config: Path = ConfigOption,
    trials: int = typer.Option(
        20, "--trials", "-n", min=1, max=COUNT_LIMIT, help="Trials this process runs (added to the study)."
    ),
    timeout: str | None = typer.Option(
        None, "--timeout", help="Start no trial after this long: seconds, or e.g. 30m, 2h, 1h30m."
    ),
    storage: str | None = typer.Option(
        None,
        "--storage",
        help="The study's database URL, shared by every process that works on it: sqlite:///study.db, "
        "postgresql://..., mysql+pymysql://... (default: study.db in output_dir).",
    ),
    study: str | None = typer.Option(
        None, "--study", help="The study's name in the storage (default: the config file's name without .yaml)."
    ),
    retrain_best: bool = typer.Option(
        False, "--retrain-best", help="Then train best.yaml into output_dir/best (test data scored)."
    ),
    set_: list[str] | None = SetOption,
    output_dir: str | None = typer.Option(
        None, "--output-dir", "-o", help="Folder of the study's reports (overrides output_dir)."
    ),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Start afresh: replace an earlier tune output (and the study.db in it)."
    ),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Search the config's `tune.space` (or the task's default space) with Optuna: TPE sampling,
    trials that lag the median pruned, each trial trained as `bertkit train` would in a hidden folder
    of output_dir, then deleted. Writes trials.csv / .json, history.png, importances.png and best.yaml to output_dir;
    running again continues the study."""
    from bertkit.config import load_config
    from bertkit.tuning import TuneOptions
    from bertkit.tuning import tune as run_study
    from bertkit.tuning.search import parse_duration

    seconds = parse_duration(timeout) if timeout else None
    extra = {"model.trust_remote_code": True} if trust_remote_code else {}
    cfg = load_config(config, set_, output_dir=output_dir, **extra)
    options = TuneOptions(
        trials=trials,
        timeout=seconds,
        storage=storage,
        study=study or config.stem,
        retrain_best=retrain_best,
        overwrite=overwrite,
        protect=(config,),
    )
    _show(run_study(cfg, options))


def _show(result, shown: int = 20) -> None:
    from rich.console import Console
    from rich.table import Table

    from bertkit.core.progress import console
    from bertkit.tuning.report import short_params

    table = Table(title=f"study {result.study}: {len(result.rows)} trials, best first")
    for name in ("trial", "state", result.metric, "parameters", "seconds"):
        table.add_column(name, justify="right" if name in (result.metric, "seconds", "trial") else "left")
    for row in result.rows[:shown]:
        state = row["state"] + (f" (eval {row['pruned_at_evaluation']})" if row["pruned_at_evaluation"] else "")
        value = "" if row["value"] is None else f"{row['value']:.4f}"
        seconds = "" if row["seconds"] is None else f"{row['seconds']:.0f}"
        table.add_row(str(row["number"]), state, value, short_params(row["params"]), seconds)
    Console().print(table)  # to stdout: the result
    for note in result.notes:
        console.print(f"[yellow]{note}[/yellow]")
    if len(result.rows) > shown:
        console.print(f"{len(result.rows) - shown} more trials in {result.output}/trials.csv")
    console.print(f"[green]reports written to[/green] {result.output} ({', '.join(result.written)})")
    if result.best_config:
        console.print(f"[green]best config:[/green] {result.best_config}")
    if result.bundle:
        console.print(f"[green]best model retrained into[/green] {result.bundle}")
