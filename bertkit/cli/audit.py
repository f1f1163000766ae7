"""`bertkit audit`: find the training examples whose label is probably wrong."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import COUNT_LIMIT, ConfigOption, SetOption

SHOWN = 15  # flags in the terminal's table; label_issues.jsonl has them all


def audit(
    config: Path = ConfigOption,
    folds: int = typer.Option(
        5, "--folds", "-k", min=2, max=COUNT_LIMIT, help="Folds: each is trained on the others and predicts itself."
    ),
    output_dir: str | None = typer.Option(
        None, "--output-dir", "-o", help="Folder of the report (default: the config's output_dir + '-audit')."
    ),
    write_fixed: bool = typer.Option(
        False, "--write-fixed", help="Also write fixed.jsonl: every example, each flagged label as suggested."
    ),
    resume: bool = typer.Option(False, "--resume", help="Go on from the folds an interrupted audit finished."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing report, or start an audit afresh."),
    batch_size: int = typer.Option(64, "--batch-size", "-b", min=1, max=COUNT_LIMIT, help="Texts per forward pass."),
    set_: list[str] | None = SetOption,
) -> None:
    """Find the training examples whose label is probably wrong (classify and ner): k models,
    each trained as `bertkit train` would on all but one fold, predict the fold they did not
    see; cleanlab flags the labels those predictions contradict. Writes label_issues.jsonl (most
    suspect first, with file and line), summary.json and label_issues.png."""
    from bertkit.auditing import AuditOptions
    from bertkit.auditing import audit as run_audit
    from bertkit.config import load_config

    cfg = load_config(config, set_)
    target = output_dir or f"{str(cfg.output_dir).rstrip('/')}-audit"
    cfg = cfg.model_copy(update={"output_dir": target})
    options = AuditOptions(folds, resume, overwrite, write_fixed, batch_size, protect=(config,))
    _show(run_audit(cfg, options))


def _show(result) -> None:
    from rich.console import Console
    from rich.table import Table

    from bertkit.core.progress import console

    summary = result.summary
    unit = "words" if "words" in summary else "examples"
    table = Table(title=f"{summary['flagged']:,} of {summary.get('words', summary['examples']):,} {unit} flagged, "
                        "most suspect first")  # fmt: skip
    for name in ("rank", "where", "text", "given", "suggested", "quality"):
        table.add_column(name, justify="right" if name in ("rank", "quality") else "left", overflow="fold")
    for record in result.records()[:SHOWN]:
        where = f"{Path(record['file']).name}:{record.get('line', record.get('record', record.get('row', '')))}"
        text = record["text"] if len(record["text"]) <= 70 else record["text"][:67] + "..."
        if "word" in record:
            text = f"{record['word']} (word {record['word_number']}) in: {text}"
        given, suggested = (" + ".join(v) if isinstance(v, list) else v for v in (record["given"], record["suggested"]))
        table.add_row(str(record["rank"]), where, text, given, suggested, f"{record['quality']:.3f}")
    Console().print(table)  # to stdout: the result
    share = summary["estimated_error_share"]
    accuracy = summary["out_of_fold_accuracy"]
    console.print(f"estimated share of wrong labels: {share:.1%}; held-out accuracy {accuracy:.1%}")
    written = ", ".join(p.name for p in sorted(result.folder.iterdir()) if not p.name.startswith("."))
    console.print(f"[green]report written to[/green] {result.folder} ({written})")
