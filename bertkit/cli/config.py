"""`bertkit config show` and `bertkit config init`: print a resolved config, or write a starting one."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import ConfigOption, SetOption

config_app = typer.Typer(help="Show or start a config file.", no_args_is_help=True)


@config_app.command("show")
def config_show(config: Path = ConfigOption, set_: list[str] | None = SetOption) -> None:
    """Print the resolved config: the file, its overrides and every default."""
    from bertkit.config import load_config, to_yaml

    typer.echo(to_yaml(load_config(config, set_)), nl=False)


@config_app.command("init")
def config_init(
    task: str = typer.Argument("classify", help="The task to write a config for."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write to this file (- or absent: stdout)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing file."),
) -> None:
    """Write a complete, commented starting config for TASK."""
    from bertkit.config import starter_yaml
    from bertkit.core.outputs import atomic_text, check_output_file

    text = starter_yaml(task)
    check_output_file(output, replace=overwrite, example=f"{task}.yaml")
    with atomic_text(output) as handle:
        handle.write(text)
    if output not in (None, "-"):
        from bertkit.core.progress import console

        console.print(f"[green]config for {task} written to[/green] {output}")
