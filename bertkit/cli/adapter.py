"""`bertkit adapter merge`: an adapter bundle (`train.adapter`) made a plain bundle."""

from __future__ import annotations

from pathlib import Path

import typer

adapter_app = typer.Typer(help="LoRA adapter bundles: merge one into its base model.", no_args_is_help=True)


@adapter_app.command("merge")
def merge(
    model: str = typer.Option(..., "--model", "-m", help="The adapter bundle (trained with train.adapter)."),
    output: Path = typer.Option(..., "--output", "-o", help="The merged bundle to write."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a bundle bertkit wrote there before."),
) -> None:
    """Merge an adapter bundle into its base: a plain bundle that needs neither the base nor peft
    (`bertkit export` works on it)."""
    from bertkit.adapter_merging import merge_bundle
    from bertkit.core.progress import console, status

    with status(f"merging {model} into its base"):
        written = merge_bundle(model, str(output), overwrite)
    console.print(f"[green]merged bundle written to[/green] {written}")
