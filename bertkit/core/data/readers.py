"""Readers for local files, one record (a dict) at a time, in constant memory.

Every reader reports problems with the file and line they are on: a malformed CSV row or JSON
line, bytes that are not UTF-8. Formats come from the extension (`.gz` is looked through) or are
given explicitly. `located_records` also says where each record is (`file:line`), for messages
about its contents.

Blank lines: readers of training and evaluation data skip them. Commands whose output must stay
aligned with their input line for line (predict, embed, search) ask for them (`keep_blank`), and
get a `Blank` record for each: the text field (or every CSV column) empty.

TSV is read as written: fields are split at tabs and kept literally, quotes included (as in
GLUE's and most TSV files); CSV follows the usual quoting rules. A CSV / TSV file without a
header row is read with the column names given (`Layout.columns`).

Text from several columns: a text column named `title + description` is filled in on every
record from its parts (`bertkit.core.text_columns`).

The readers of each format are in `format_readers`, of folders and files of classes in
`class_folders`; the records they yield, and the checks of their fields, in `records`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from bertkit.core.data.class_folders import read_folder
from bertkit.core.data.conll import read_conll
from bertkit.core.data.files import STDIN, text_lines
from bertkit.core.data.format_readers import read_delimited, read_json, read_jsonl, read_lines, read_parquet
from bertkit.core.data.formats import PLAIN, Layout, detect_format
from bertkit.core.data.records import placed  # noqa: F401 (bertkit.exporting imports it from here)
from bertkit.core.data.squad import read_squad
from bertkit.core.errors import BertkitError
from bertkit.core.text_columns import fill_joined


def read_records(path: str, fmt: str | None = None, **options) -> Iterator[dict]:
    """Yield the records of a local file (or stdin for '-') one by one (`options` as for
    `located_records`)."""
    for _, record in located_records(path, fmt, **options):
        yield record


def located_records(
    path: str,
    fmt: str | None = None,
    text_column: str = "text",
    label_column: str = "label",
    keep_blank: bool = False,
    layout: Layout = PLAIN,
    text_join: str = " ",
) -> Iterator[tuple[str, dict]]:
    """Yield (where, record) pairs: `where` names the file and line (or record) of each. A
    `text_column` that joins several columns is filled in from them (`text_join` between)."""
    for where, record in _located(path, fmt, text_column, label_column, keep_blank, layout):
        yield where, fill_joined(record, text_column, text_join)


def _located(
    path: str, fmt: str | None, text_column: str, label_column: str, keep_blank: bool, layout: Layout
) -> Iterator[tuple[str, dict]]:
    fmt = detect_format(path, fmt)
    name = "<stdin>" if path == STDIN else path
    if path != STDIN and not Path(path).exists():
        raise BertkitError(f"data file not found: {path}")
    if layout.columns and fmt not in ("csv", "tsv") and not layout.columns_for_tables_only:
        raise BertkitError(
            f"{name}: column names were given (columns / --columns), but the file is read as {fmt}, whose records "
            "name their own fields. Leave the names out for it, or set its format (csv or tsv)."
        )
    if fmt == "folder":
        yield from read_folder(Path(path), text_column, label_column, layout.encoding)
    elif fmt == "parquet":
        for number, record in enumerate(read_parquet(path), start=1):
            yield f"{name}, row {number}", record
    elif fmt == "conll":
        for record in read_conll(path, tag_column=None, encoding=layout.encoding):
            yield f"{name}:{record['line']}", record
    elif fmt == "json":
        for number, record in enumerate(read_json(path), start=1):
            yield f"{name}, record {number}", record
    elif fmt == "squad":
        for record in read_squad(path):
            yield record["where"], record
    elif fmt == "jsonl":
        yield from read_jsonl(path, text_column, keep_blank, layout.encoding)
    elif fmt in ("csv", "tsv"):
        yield from read_delimited(path, fmt, keep_blank, layout)
    else:
        yield from read_lines(path, text_column, keep_blank, layout.encoding)


def count_records(path: str, fmt: str | None = None, keep_blank: bool = False, layout: Layout = PLAIN) -> int | None:
    """A cheap record count for progress bars (None when it would cost a full parse)."""
    fmt = detect_format(path, fmt)
    if path == STDIN or fmt not in ("text", "jsonl", "csv", "tsv"):  # conll: sentences span lines
        return None
    lines = sum(1 for _, line in text_lines(path, layout.encoding) if keep_blank or line.strip())
    headed = fmt in ("csv", "tsv") and (layout.columns is None or layout.header)
    return max(lines - (1 if headed else 0), 0)
