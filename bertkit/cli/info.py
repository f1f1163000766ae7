"""`bertkit info`: versions, devices and the accelerate configuration in use; with --model, what a
bundle is (task, labels, tag scheme, scores)."""

from __future__ import annotations

from pathlib import Path

import typer


def info(
    model: str | None = typer.Option(
        None, "--model", "-m", help="Describe this bundle (its bertkit.json) instead of the environment."
    ),
) -> None:
    """Versions, devices and the accelerate configuration in use; with --model, what a bundle is."""
    import os

    if model is not None:
        from bertkit.bundle_summary import summary_rows

        rows = summary_rows(model)
        width = max(len(name) for name, _ in rows)
        for name, value in rows:
            typer.echo(f"{name:{width}}  {value}")
        return

    from bertkit.core.hub import offline
    from bertkit.training.export import library_versions

    for name, version in library_versions().items():
        typer.echo(f"{name:14} {version}")
    import torch

    typer.echo(f"{'cuda':14} {torch.cuda.is_available()} ({torch.cuda.device_count()} device(s))")
    for i in range(torch.cuda.device_count()):
        props = torch.cuda.get_device_properties(i)
        typer.echo(
            f"  cuda:{i}       {props.name}, {props.total_memory / 2**30:.1f} GiB, "
            f"bf16={torch.cuda.is_bf16_supported()}"
        )
    typer.echo(f"{'cpu threads':14} {torch.get_num_threads()}")
    typer.echo(f"{'hub offline':14} {offline()}")
    try:
        from accelerate.commands.config import default_config_file

        path = os.environ.get("ACCELERATE_CONFIG_FILE") or default_config_file
        exists = Path(path).is_file()
        typer.echo(f"{'accelerate':14} config {path} ({'found' if exists else 'none: single process defaults'})")
        if exists:
            typer.echo("  " + Path(path).read_text().strip().replace("\n", "\n  "))
    except ImportError:
        typer.echo(f"{'accelerate':14} not installed")
