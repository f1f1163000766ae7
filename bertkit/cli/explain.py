"""`bertkit explain`: which words of a text made a model predict what it did."""

from __future__ import annotations

import typer

from bertkit.cli.options import TrustOption


def explain(
    model: str = typer.Option(..., "--model", "-m", help="Model bundle (classify, ner or qa; or a plain HF folder)."),
    text: str = typer.Option(..., "--text", "-t", "--context", help="The text to explain (for QA: the context)."),
    text_pair: str | None = typer.Option(None, "--text-pair", help="The second text, for models that read pairs."),
    question: str | None = typer.Option(None, "--question", "-q", help="QA: the question asked about --text."),
    target: str | None = typer.Option(
        None,
        "--target",
        help="classify: the label to explain (name or number; default: the predicted one); "
        "ner: only entities of this type.",
    ),
    method: str = typer.Option("integrated-gradients", "--method", help="integrated-gradients (default) or occlusion."),
    steps: int = typer.Option(64, "--steps", help="Integrated gradients: points on the path (more: smaller error)."),
    baseline: str = typer.Option("pad", "--baseline", help="What replaces the words: pad or mask."),
    batch_size: int = typer.Option(16, "--batch-size", help="Inputs run through the model at once."),
    output: str | None = typer.Option(None, "--output", "-o", help="Write the words coloured: NAME.html or NAME.png."),
    json_path: str | None = typer.Option(None, "--json", help="Write the attributions as JSON (- for stdout)."),
    device: str | None = typer.Option(
        None, "--device", help="cpu, cuda, cuda:1, ... (default: a GPU if there is one)."
    ),
    trust_remote_code: bool = TrustOption,
) -> None:
    """Per-word attributions of a prediction: towards a label (classify), each predicted entity (ner)
    or the answer's start and end (qa), by integrated gradients (they sum to the score's change from
    the baseline) or occlusion; shown coloured here, and written as HTML, PNG or JSON."""
    from bertkit.core.progress import console
    from bertkit.explain.render import terminal
    from bertkit.explain.run import TOLERANCE, Explanation, explain_file, incomplete

    asked = Explanation(text, text_pair, question, target, method, steps, baseline, batch_size)
    found = explain_file(model, asked, output, json_path, trust_remote_code, device)
    if json_path != "-":
        from rich.console import Console

        terminal(found, Console(highlight=False))
    for name in incomplete(found):
        console.print(
            f"[yellow]warning:[/yellow] {name}: the attributions miss the score's change by more than "
            f"{TOLERANCE:.0%} (completeness error in the JSON); raise --steps (now {steps})"
        )
    if output is not None:
        console.print(f"[green]explanation written to[/green] {output}")
