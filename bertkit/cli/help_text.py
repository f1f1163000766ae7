"""What the help shows of a command's docstring: its paragraphs, each reflowed to the terminal."""

from __future__ import annotations

import inspect

import typer


def reflowed(text: str | None) -> str | None:
    """A docstring as help: each paragraph one line, so that the help reflows it to the terminal's
    width (a docstring's own line breaks survived into `bertkit --help`, mid-sentence)."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in paragraphs)


def reflow_help(typer_app: typer.Typer) -> None:
    """Every command's help (and every group's) of `typer_app` as `reflowed` says."""
    for command in typer_app.registered_commands:
        command.help = reflowed(command.help or (command.callback.__doc__ if command.callback else None))
    for group in typer_app.registered_groups:
        group.help = reflowed(group.help)
        inner = group.typer_instance
        inner.info.help = reflowed(inner.info.help)
        reflow_help(inner)
