"""Prediction records written as JSON lines, CSV, TSV, CoNLL or SQuAD, shared by every task."""

from __future__ import annotations

import csv
import json
import tempfile
from collections.abc import Iterator

from bertkit.core.errors import BertkitError
from bertkit.core.outputs.strict_json import check, dumps

OUTPUT_FORMATS = ("jsonl", "csv", "tsv", "conll", "squad")
# Characters that JSON leaves raw inside strings but that many line readers take for a line
# break (Python's str.splitlines, JavaScript before ES2019): escaped, one record stays one line.
_LINE_BREAKING = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def json_line(record, where: str = "") -> str:
    """One JSON lines record, without its newline: valid JSON (no NaN or Infinity: `NotFinite`
    names the field and `where`) that every line reader keeps whole."""
    return dumps(record, where, ensure_ascii=False).translate(_LINE_BREAKING)


def conll_cell_error(cell: str, position: int, where: str) -> BertkitError | None:
    """Why `cell` (the token at `position` of a sentence) cannot be a CoNLL cell, or None. A cell
    must be one white-space-free word: a token holding a space, a line break or nothing at all
    would shift the columns or end the sentence early, and a first token `-DOCSTART-` reads as a
    document marker; the N-th sentence of the output would no longer be the N-th record of the
    input."""
    if cell.split() != [cell] or (position == 0 and cell == "-DOCSTART-"):
        return BertkitError(
            f"{where}: token {position + 1} ({cell!r}) cannot be written as a CoNLL row "
            "(it is empty, holds white space or a line break, or reads as a -DOCSTART- line). "
            "Use --format jsonl for this input."
        )
    return None


def _conll_cell(cell: str, number: int, position: int) -> str:
    error = conll_cell_error(cell, position, f"record {number} of the input")
    if error:
        raise error
    return cell


# ---------------------------------------------------------------- prediction records


class RecordWriter:
    """Writes prediction records as JSON lines, flattened into CSV / TSV columns, as CoNLL token
    rows, or (squad) as the one JSON object `{id: answer}` that the official SQuAD scripts read.
    Use it as a context manager (or call `finish`): CSV, TSV and squad are written at the end.

    CSV and TSV columns are those of all the records, not of the first one: records differ (an
    empty input's result has `empty`, a record without an id has no `id`), so rows are kept in a
    temporary file until the end, when the header is known. Columns keep the records' own order
    (a column first seen in a later record goes after the column before it there), so the header
    does not depend on which record comes first; `empty` is always there, last (`true` or `false`).
    A missing or null value is an empty cell; booleans are written `true` / `false`, as in JSON.

    TSV is written as bertkit reads it: values as they are, no quoting, except that a value
    holding a tab or a line break is quoted CSV-style (TSV has no other way to carry one)."""

    EMPTY = "empty"  # the marker of an empty input's result: a column of every table

    def __init__(self, handle, fmt: str):
        if fmt not in OUTPUT_FORMATS:
            raise BertkitError(f"unknown output format '{fmt}'; use one of {', '.join(OUTPUT_FORMATS)}")
        self.handle, self.fmt = handle, fmt
        self._columns: list[str] = []
        self._rows = tempfile.TemporaryFile("w+", encoding="utf-8") if fmt in ("csv", "tsv") else None
        self._answers: dict[str, str] = {}
        self._records = 0

    def __enter__(self) -> RecordWriter:
        return self

    def __exit__(self, kind, error, trace) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
            if self._rows is not None:
                self._rows.close()

    def finish(self) -> None:
        if self.fmt == "squad":
            self.handle.write(dumps(self._answers, indent=1, ensure_ascii=False) + "\n")
        elif self._rows is not None:
            self._write_table()

    def write(self, record: dict) -> None:
        if self.fmt == "squad":
            if "id" not in record or "answer" not in record:
                raise BertkitError("the squad output format needs question answers with ids; use jsonl")
            self._answers[str(record["id"])] = record["answer"] or ""
            return
        if self.fmt == "conll":  # token rows with the predicted tag as a last column
            if "tags" not in record:
                raise BertkitError(
                    "the conll output format needs token input (a CoNLL file, or JSON lines with 'tokens'); "
                    "use jsonl for text input"
                )
            self._records += 1
            predicted = record.get("predicted_tags", record["tags"])  # `tags` is the gold when both are there
            gold = record["tags"] if "predicted_tags" in record else None
            rows = record.get("rows") or [[token] for token in record["tokens"]]
            if isinstance(gold, list) and len(gold) == len(record["tokens"]) and "rows" not in record:
                # token, gold tag, predicted tag: as conlleval reads them
                rows = [[token, str(tag)] for token, tag in zip(record["tokens"], gold, strict=True)]
            lines = []
            for index, (row, tag) in enumerate(zip(rows, predicted, strict=True)):
                _conll_cell(str(row[0]), self._records, index)
                lines.append(" ".join([*row, tag]) + "\n")
            self.handle.write("".join(lines) + "\n")
            return
        self._records += 1
        where = f"result {self._records} (input record {self._records})"
        if self.fmt == "jsonl":
            self.handle.write(json_line(record, where) + "\n")
            return
        check(record, where)  # no NaN or Infinity in a table either
        flat = flatten(record)
        _merge_columns(self._columns, flat)
        self._rows.write(json.dumps(flat, ensure_ascii=False) + "\n")

    def _write_table(self) -> None:
        columns = [c for c in self._columns if c != self.EMPTY] + [self.EMPTY]
        write_row = csv.writer(self.handle).writerow if self.fmt == "csv" else self._tsv_row
        write_row(columns)
        for line in self._lines():
            flat = json.loads(line)
            flat.setdefault(self.EMPTY, False)
            write_row([_cell(flat.get(c)) for c in columns])

    def _lines(self) -> Iterator[str]:
        self._rows.flush()
        self._rows.seek(0)
        yield from self._rows

    def _tsv_row(self, values: list) -> None:
        cells = []
        for value in values:
            text = str(value)
            if any(c in text for c in "\t\r\n"):
                text = '"' + text.replace('"', '""') + '"'
            cells.append(text)
        self.handle.write("\t".join(cells) + "\n")


def _merge_columns(columns: list[str], record: dict) -> None:
    """Add the keys of `record` that `columns` lacks, each right after the key before it in the
    record (first when it is the record's first key): the records' own order, whichever record
    shows a key first."""
    previous = None
    for key in record:
        if key not in columns:
            columns.insert(columns.index(previous) + 1 if previous is not None else 0, key)
        previous = key


def _cell(value) -> str | int | float:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def _plain(value) -> str:
    """One value of a flattened list as CSV / TSV cells spell it (null empty, booleans as JSON)."""
    if value is None:
        return ""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def flatten(record: dict, prefix: str = "") -> dict:
    """{'scores': {'pos': 0.9}} -> {'scores.pos': 0.9}; lists of plain values joined with '|' (a null
    as nothing between its bars, as a null field is an empty cell)."""
    flat = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list) and all(not isinstance(v, dict | list) for v in value):
            flat[name] = "|".join(_plain(v) for v in value)
        elif isinstance(value, list):
            flat[name] = json.dumps(value, ensure_ascii=False)
        else:
            flat[name] = value
    return flat
