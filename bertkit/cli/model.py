"""`bertkit model tiny`: a tiny random model of a given model's family, for smoke tests."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import TextColumnOption
from bertkit.core.errors import BertkitError
from bertkit.core.seeds import MAX_SEED
from bertkit.families import FAMILIES

MAX_VOCABULARY = 1_000_000  # more than any BERT-family vocabulary (XLM-R: 250,002); a larger number overflowed

model_app = typer.Typer(help="Build models: a tiny random one for smoke tests in CI.", no_args_is_help=True)


@model_app.command("tiny")
def tiny(
    source: str | None = typer.Option(
        None,
        "--from",
        help="The model whose family and tokenizer to take: a model directory, a Hub id, or a tokenizer "
        "directory (`bertkit tokenizer train`: a BERT with that tokenizer).",
    ),
    family: str | None = typer.Option(
        None,
        "--family",
        help=f"Instead of --from: build this family from its config class alone, with a tokenizer of its kind "
        f"learnt from --vocab-from or a few built-in sentences. One of {', '.join(FAMILIES)}.",
    ),
    output: Path = typer.Option(..., "--output", "-o", help="The model directory to write."),
    layers: int = typer.Option(2, "--layers", help="Transformer layers."),
    hidden: int = typer.Option(64, "--hidden", help="Hidden size (a multiple of --heads)."),
    heads: int = typer.Option(2, "--heads", help="Attention heads."),
    intermediate: int | None = typer.Option(
        None, "--intermediate", help="Feed-forward width.  [default: 4 x --hidden]", show_default=False
    ),
    vocab_from: list[str] = typer.Option(
        [], "--vocab-from", help="Learn a small WordPiece vocabulary from these texts instead; repeatable."
    ),
    vocab_size: int | None = typer.Option(
        None,
        "--vocab-size",
        min=16,
        max=MAX_VOCABULARY,
        help="Entries in the learnt vocabulary (with --vocab-from; with --family, at most this many, default 1000, "
        "and at least every character of the text, for byte-level BPE all 256 bytes, and the special tokens).",
    ),
    text_column: str = TextColumnOption,
    min_frequency: int | None = typer.Option(
        None,
        "--min-frequency",
        min=1,
        help="With --from and --vocab-from: drop pieces seen fewer times than this.  [default: 2]",
        show_default=False,
    ),
    seed: int = typer.Option(
        0,
        "--seed",
        min=0,
        max=MAX_SEED,
        help="Seed of the random weights: the same seed, the same model, a learnt vocabulary included.",
    ),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a tiny model bertkit wrote there before."),
) -> None:
    """A tiny random model of the same family as --from, for smoke tests.

    BERT, RoBERTa, DistilBERT, ELECTRA, ...: a few layers deep, with --from's tokenizer, or a
    vocabulary learnt with --vocab-from. Only the config and tokenizer of --from are read, never
    its weights. A folder holding only a tokenizer (from `bertkit tokenizer train`, --japanese
    included) gives a BERT built around that tokenizer. With --family instead, no model is read at
    all: see docs/families.md."""
    from bertkit.core.progress import console, status
    from bertkit.tiny_models import Shape, build_tiny

    shape = Shape(layers, hidden, heads, intermediate)
    if family is not None:
        if min_frequency is not None:
            raise BertkitError(
                "--min-frequency is for --from with --vocab-from (a WordPiece vocabulary learnt by bertkit); --family "
                "learns its family's own kind of vocabulary with the trainer's settings. Leave it out, or use "
                "--vocab-size"
            )
        built = _tiny_family(family, source, output, shape, vocab_from, vocab_size, text_column, seed, overwrite)
    elif source is None:
        raise BertkitError("give --from MODEL (a model to take the family and tokenizer of) or --family NAME")
    else:
        with status(f"building a tiny model from {source}"):
            built = build_tiny(
                source, output, shape, vocab_from, vocab_size, text_column, min_frequency or 2, seed, overwrite
            )
    console.print(f"[green]tiny {built.family} model ({built.architecture}) written to[/green] {built.path}")
    rows = [
        ("from", built.source),
        ("layers", built.layers),
        ("hidden", built.hidden),
        ("heads", built.heads),
        ("intermediate", built.intermediate if built.intermediate is not None else "as the family sets it"),
        ("positions", built.positions if built.positions is not None else "unbounded"),
        ("vocabulary", f"{built.vocab_size:,} ({built.tokenizer}, {built.vocabulary})"),
        ("parameters", f"{built.parameters:,}"),
    ]
    for key, value in rows:
        typer.echo(f"{key:13} {value}")


def _tiny_family(family, source, output, shape, vocab_from, vocab_size, text_column, seed, overwrite):
    from bertkit.core.progress import status
    from bertkit.tiny_families import build_family

    if source is not None:
        raise BertkitError(f"--family {family} and --from {source}: give one of them")
    with status(f"building a tiny {family} model"):
        return build_family(family, output, shape, vocab_from, vocab_size, text_column, seed, overwrite)
