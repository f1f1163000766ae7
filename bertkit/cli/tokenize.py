"""`bertkit tokenize`: show how a model's tokenizer cuts text."""

from __future__ import annotations

import typer

from bertkit.cli.options import TextColumnOption, TrustOption
from bertkit.core.errors import BertkitError


def tokenize(
    text: list[str] = typer.Argument(None, help="Texts to cut into tokens (or use --input)."),
    model: str = typer.Option(..., "--model", "-m", help="A model or tokenizer: bundle, HF folder or hub id."),
    input: str | None = typer.Option(None, "--input", "-i", help="A file of texts, one a line (or CSV/JSONL)."),
    text_column: str = TextColumnOption,
    as_json: bool = typer.Option(False, "--json", help="One JSON line per text instead of tables."),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Show how the model's tokenizer cuts text: each token, its id, and the characters it covers
    (one result per text: a blank line of --input gets one with no tokens)."""
    from rich.table import Table

    from bertkit.core.data.corpus import read_lines
    from bertkit.core.outputs.records import json_line
    from bertkit.core.progress import console
    from bertkit.core.tokenization import describe_tokens, load_tokenizer

    texts = list(text or [])
    texts += list(read_lines(input, text_column, keep_blank=True, option="--text-column")) if input else []
    if not texts:
        raise BertkitError("give texts to tokenize as arguments, or a file with --input")
    tokenizer = load_tokenizer(model, trust_remote_code=trust_remote_code)
    for one in texts:
        tokens = describe_tokens(tokenizer, one)
        if as_json:
            typer.echo(json_line({"text": one, "tokens": tokens}))
            continue
        table = Table(title=f"{one[:60]}{'…' if len(one) > 60 else ''}  ({len(tokens)} tokens)", title_justify="left")
        for column in ("#", "token", "id", "characters", "text"):
            table.add_column(column, justify="right" if column in ("#", "id") else "left")
        for i, t in enumerate(tokens):
            table.add_row(str(i), t["token"], str(t["id"]), f"{t['start']}-{t['end']}", t["text"])
        console.print(table)
