"""`bertkit attention`: draw a model's attention on one text (or pair)."""

from __future__ import annotations

import typer

from bertkit.cli.options import TrustOption


def attention(
    model: str = typer.Option(..., "--model", "-m", help="Model bundle (or any HF encoder directory)."),
    text: str = typer.Option(..., "--text", "-t", help="The text to look at."),
    text_pair: str | None = typer.Option(None, "--text-pair", help="A second text, read as a pair."),
    layer: str = typer.Option("-1", "--layer", help="Layer to draw (0 is the first, -1 the last), or all."),
    head: str = typer.Option(
        "0",
        "--head",
        help="Head to draw, or all (a grid of the layer's heads; with --layer all, of every head).",
    ),
    words: bool = typer.Option(False, "--words", help="Merge WordPiece pieces into words."),
    output: str | None = typer.Option(None, "--output", "-o", help="The heatmap to write (PNG)."),
    json_path: str | None = typer.Option(
        None, "--json", help="Write every layer's and head's weights as JSON (- for stdout)."
    ),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Attention weights of one text: a heatmap of a head (default: the last layer's first head)
    with the [CLS] row as a bar chart, a grid of a layer's heads, or each layer's mean; and the
    weights as JSON, indexed layer, head, attending token, attended-to token (rows sum to 1)."""
    from bertkit.attention import attention_file
    from bertkit.core.progress import console

    if output is None and json_path is None:
        output = "attention.png"
    layer_value = "all" if layer == "all" else layer
    head_value = "all" if head == "all" else head
    found = attention_file(model, text, text_pair, layer_value, head_value, words, output, json_path, trust_remote_code)
    layers, heads = found.weights.shape[:2]
    if output is not None:
        shape = f"{len(found.tokens)} tokens, {layers} layers × {heads} heads"
        console.print(f"[green]attention ({shape}) drawn to[/green] {output}")
