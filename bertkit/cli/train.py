"""`bertkit train TASK`: one sub-command per registered task, each fine-tuning from a YAML config."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import ConfigOption, SetOption, TrustOption

train_app = typer.Typer(help="Fine-tune a model from a YAML config.", no_args_is_help=True)


def _register_train_command(task: str, summary: str) -> None:
    def command(
        config: Path = ConfigOption,
        set_: list[str] | None = SetOption,
        output_dir: str | None = typer.Option(
            None, "--output-dir", "-o", help="Where the model bundle goes (overrides output_dir)."
        ),
        overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory."),
        resume: bool = typer.Option(False, "--resume", help="Continue an interrupted run from its last checkpoint."),
        trust_remote_code: bool = TrustOption,
        smoke: bool = typer.Option(
            False,
            "--smoke",
            help="Check the config in seconds: a few steps on a tiny model of the same family and a small "
            "sample of the data, in a temporary folder (writes nothing to output_dir). `bertkit smoke` does "
            "the whole round trip.",
        ),
    ) -> None:
        if smoke:
            from bertkit.cli.smoke import run_and_report

            extra = ["model.trust_remote_code=true"] if trust_remote_code else []
            run_and_report(config, [*(set_ or []), *extra], task, None, stages=("read", "train"))
            return
        train(task, config, set_, output_dir, overwrite, resume, trust_remote_code)

    train_app.command(task, help=summary)(command)


def sync_train_commands() -> None:
    """One `bertkit train NAME` per registered task (tasks registered later get theirs too)."""
    from bertkit.tasks import registry

    known = {info.name for info in train_app.registered_commands}
    for item in registry.records():
        if item.name not in known:
            _register_train_command(item.name, item.summary)


sync_train_commands()


def train(task: str, config: Path, sets, output_dir, overwrite: bool, resume: bool, trust: bool = False) -> None:
    from bertkit.config import load_config

    extra = {"model.trust_remote_code": True} if trust else {}
    cfg = load_config(config, sets, task=task, output_dir=output_dir, **extra)
    from bertkit import training
    from bertkit.core.progress import console
    from bertkit.core.sharding import is_main

    final, scores = training.train(cfg, overwrite=overwrite, resume=resume, protect=[config])
    if is_main():
        _print_metrics(scores)
        console.print(f"[green]model saved to[/green] {final}")


def _print_metrics(data: dict) -> None:
    from rich.table import Table

    table = Table(title="metrics", show_header=True)
    roles = [r for r in ("validation", "test") if r in data]
    table.add_column("metric")
    for role in roles:
        table.add_column(role, justify="right")
    names = [k for k, v in data[roles[0]].items() if isinstance(v, float)] if roles else []
    for name in names:
        table.add_row(name, *[f"{data[r].get(name, float('nan')):.4f}" for r in roles])
    # to stdout: the one result a script may want to capture
    from rich.console import Console

    Console().print(table)
