"""CoNLL column files: one token a line with whitespace-separated columns, a blank line between
sentences, `-DOCSTART-` lines between documents (skipped)."""

from __future__ import annotations

from collections.abc import Iterator

from bertkit.core.data.files import text_lines
from bertkit.core.errors import BertkitError


def read_conll(
    path: str, token_column: int = 0, tag_column: int | None = -1, encoding: str = "utf-8"
) -> Iterator[dict]:
    """Yield {"tokens", "tags", "rows", "line"} per sentence (rows: every column of every token
    line, for writing predictions back); tags are absent when tag_column is None.

    Every line of a file must have the same number of columns as its first token line.
    """
    width = first_line = None
    tokens: list[str] = []
    tags: list[str] = []
    rows: list[list[str]] = []
    start = 0
    for number, line in text_lines(path, encoding):
        fields = line.split()
        if not fields or fields[0] == "-DOCSTART-":
            if tokens:
                yield _sentence(tokens, tags, rows, start, tag_column)
                tokens, tags, rows = [], [], []
            continue
        if width is None:
            width, first_line = len(fields), number
            for column in (token_column, tag_column):
                if column is not None and not -width <= column < width:
                    raise BertkitError(f"{path}:{number}: column {column} does not exist: the file has {width} columns")
        elif len(fields) != width:
            raise BertkitError(
                f"{path}:{number}: expected {width} columns (as on line {first_line}), "
                f"found {len(fields)}: {line.strip()!r}"
            )
        if not tokens:
            start = number
        tokens.append(fields[token_column])
        rows.append(fields)
        if tag_column is not None:
            tags.append(fields[tag_column])
    if tokens:
        yield _sentence(tokens, tags, rows, start, tag_column)


def _sentence(tokens, tags, rows, start, tag_column) -> dict:
    record = {"tokens": tokens, "line": start, "rows": rows}
    if tag_column is not None:
        record["tags"] = tags
    return record
