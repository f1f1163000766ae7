"""Hard negatives of training pairs: the texts of `data.negative_column` (one column or several,
each holding one text or a list of texts) read row by row, with every mistake named by file,
line and column."""

from __future__ import annotations

from bertkit.core.errors import BertkitError

NEGATIVE = "negative_"  # prefix of the negatives' model inputs


def negative_columns(value: str | list[str] | None) -> list[str]:
    """`data.negative_column` as a list of column names (none when it is not set)."""
    if value is None:
        return []
    return [value] if isinstance(value, str) else list(value)


def negative_texts(split, columns: list[str], places: list[str]) -> list[list[str]]:
    """Each row's negatives, from all `columns` in order. A text column must hold text in every
    row; a list column may hold an empty list (that row brings no negatives of its own: its
    anchor still meets every other row's), never a blank text or something that is not text."""
    rows: list[list[str]] = [[] for _ in places]
    for column in columns:
        for where, value, row in zip(places, split[column], rows, strict=True):
            row.extend(_texts(value, where, column))
    return rows


def _texts(value, where: str, column: str) -> list[str]:
    hint = (
        "give every pair its negative, or drop the row (a column of lists may hold [] for a pair without "
        "negatives)"
    )
    if value is None or (isinstance(value, str) and not value.strip()):
        raise BertkitError(f"{where}: the negative column '{column}' is empty; {hint}")
    values = value if isinstance(value, list) else [value]
    for item in values:
        if not isinstance(item, str):
            raise BertkitError(
                f"{where}: the negative column '{column}' holds {item!r:.40}, not text; a negative is a text, "
                "or a list of texts"
            )
        if not item.strip():
            raise BertkitError(f"{where}: the negative column '{column}' holds a blank text in its list; {hint}")
    return list(values)
