"""`bertkit tokenizer train`: learn a WordPiece vocabulary and save a BERT tokenizer."""

from __future__ import annotations

from pathlib import Path

import typer

from bertkit.cli.options import COUNT_LIMIT, TextColumnOption

tokenizer_app = typer.Typer(help="Build a WordPiece tokenizer from your own text.", no_args_is_help=True)


@tokenizer_app.command("train")
def tokenizer_train(
    input: list[str] = typer.Option(
        ..., "--input", "-i", help="Text files (one text a line), folders or globs; repeatable."
    ),
    output: Path = typer.Option(..., "--output", "-o", help="The tokenizer directory to write."),
    vocab_size: int = typer.Option(
        8000, "--vocab-size", min=16, help="Entries in the vocabulary, special tokens included."
    ),
    lowercase: bool = typer.Option(True, "--lowercase/--cased", help="Lowercase (and strip accents) before splitting."),
    japanese: bool = typer.Option(
        False,
        "--japanese",
        help="Cut text into MeCab words (unidic-lite) first and save a BertJapaneseTokenizer (needs bertkit[ja]).",
    ),
    min_frequency: int = typer.Option(
        2, "--min-frequency", min=1, max=COUNT_LIMIT, help="Drop pieces seen fewer times than this."
    ),
    max_length: int = typer.Option(
        512, "--max-length", min=8, max=COUNT_LIMIT, help="The model_max_length the tokenizer records."
    ),
    text_column: str = TextColumnOption,
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing output directory."),
) -> None:
    """Learn a WordPiece vocabulary from text and save a BERT tokenizer (AutoTokenizer loads it).
    With --japanese: MeCab words, then WordPiece, as the Tohoku Japanese BERT models do."""
    from bertkit.core.data.corpus import read_lines
    from bertkit.core.outputs import check_output_dir, check_writable
    from bertkit.core.progress import console, status
    from bertkit.core.tokenizer_training import save_tokenizer, train_wordpiece

    check_output_dir(output, overwrite, input, "tokenizer")
    check_writable(output)  # before the vocabulary is learnt, which can take long
    texts = (line for path in input for line in read_lines(path, text_column, option="--text-column"))
    with status(f"learning a {vocab_size:,}-entry WordPiece vocabulary"):
        tokenizer = train_wordpiece(texts, vocab_size, lowercase, min_frequency, max_length, ", ".join(input), japanese)
    save_tokenizer(tokenizer, output, overwrite, input)
    console.print(f"[green]tokenizer with {len(tokenizer):,} entries written to[/green] {output}")
