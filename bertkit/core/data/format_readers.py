"""One reader per file format (text lines, CSV / TSV, JSON lines, JSON, Parquet): each yields the
records of one local file (or stdin) with where each is, and reports problems with the file and
line it is on. `bertkit.core.data.readers` picks the reader for a file."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator

from bertkit.core.data.files import STDIN, check_characters, load_json, parse_json, text_lines
from bertkit.core.data.formats import PLAIN, Layout
from bertkit.core.data.records import Blank
from bertkit.core.errors import BertkitError


def read_lines(path: str, text_column: str, keep_blank: bool, encoding: str, extra: dict | None = None):
    """One record a line: {text_column: line, **extra}."""
    name = "<stdin>" if path == STDIN else path
    for number, line in text_lines(path, encoding):
        line = line.rstrip("\r\n")
        if line.strip():
            yield f"{name}:{number}", {text_column: line, **(extra or {})}
        elif keep_blank:
            yield f"{name}:{number}", Blank({text_column: line})


def read_delimited(path: str, fmt: str, keep_blank: bool = False, layout: Layout = PLAIN) -> Iterator[tuple[str, dict]]:
    name = "<stdin>" if path == STDIN else path
    delimiter = "," if fmt == "csv" else "\t"
    kind = "comma" if fmt == "csv" else "tab"
    numbered = text_lines(path, layout.encoding)
    current = [0]

    def bare_lines() -> Iterable[str]:
        for number, line in numbered:
            current[0] = number
            yield line

    quoting = {"quoting": csv.QUOTE_NONE} if fmt == "tsv" else {}
    reader = csv.reader(bare_lines(), delimiter=delimiter, **quoting)
    try:
        first = next(reader)
    except StopIteration:
        return
    except csv.Error as err:
        raise BertkitError(f"{name}:{current[0]}: malformed first row: {err}") from None
    if layout.columns is None:
        if not any(h.strip() for h in first):
            raise BertkitError(
                f"{name}:{current[0]}: the header line is blank; a {fmt.upper()} file starts with its column names "
                "(or name them: data.columns, or --columns for predict and evaluate)"
            )
        header = [h.strip() for h in first]
        check_header(header, name)
        pending = None
    else:
        header = list(layout.columns)
        names_again = [h.strip() for h in first] == header
        pending = None if layout.header or (layout.header is None and names_again) else first
    started = current[0] + 1  # the line on which the next record begins
    if pending is not None:  # a file without a header: its first row is a record
        started = 1
        reader = _chained(pending, reader)
    try:
        for row in reader:
            where = f"{name}:{started}"
            spans = current[0] > started
            if not row or (len(row) == 1 and not row[0].strip()):
                if keep_blank:
                    yield where, Blank(dict.fromkeys(header, ""))
            elif len(row) != len(header):
                opened = (
                    f" The record starts on line {started} and runs to line {current[0]}: a quote opened there "
                    "is not closed?"
                    if spans
                    else ""
                )
                named = "as data.columns names" if layout.columns else "as in the header"
                advice = (
                    f"Quote any field that contains a {kind} or a line break."
                    if fmt == "csv"
                    else "A TSV field cannot hold a tab (quotes are read as text): write such text as CSV or JSONL."
                )
                raise BertkitError(
                    f"{where}: expected {len(header)} fields ({named}), found {len(row)}. {advice}{opened}"
                )
            else:
                record = dict(zip(header, row, strict=True))
                yield where, (Blank(record) if keep_blank and not any(v.strip() for v in row) else record)
            started = current[0] + 1
    except csv.Error as err:
        raise BertkitError(
            f"{name}:{started}: malformed row ({err}); a quote opened on this line may not be closed"
        ) from None


def _chained(first: list[str], rest: Iterator[list[str]]) -> Iterator[list[str]]:
    yield first
    yield from rest


def check_header(header: list[str], name: str, where: str = ":1: the header has") -> None:
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if column in seen:
            label = f"'{column}'" if column else "an empty name"
            raise BertkitError(
                f"{name}{where} {label} twice (columns {seen[column]} and {position}); give every column its own name"
            )
        seen[column] = position


def read_jsonl(
    path: str, text_column: str = "text", keep_blank: bool = False, encoding: str = "utf-8"
) -> Iterator[tuple[str, dict]]:
    name = "<stdin>" if path == STDIN else path
    for number, line in text_lines(path, encoding):
        if not line.strip():
            if keep_blank:
                yield f"{name}:{number}", Blank({text_column: ""})
            continue
        try:
            record = parse_json(line, f"{name}:{number}")
        except json.JSONDecodeError as err:
            raise BertkitError(f"{name}:{number}: not valid JSON: {err.msg} (column {err.colno})") from None
        if not isinstance(record, dict):
            raise BertkitError(f"{name}:{number}: each line must be a JSON object, found {type(record).__name__}")
        check_characters(f"{name}:{number}", line, record)
        yield f"{name}:{number}", record


def read_json(path: str) -> Iterator[dict]:
    data = load_json(path)
    if isinstance(data, dict):
        lists = [key for key, value in data.items() if isinstance(value, list)]
        if len(lists) != 1:
            raise BertkitError(
                f"{path}: expected a JSON list of records, or an object with one list of records "
                f"(found keys: {', '.join(data) or 'none'})"
            )
        data = data[lists[0]]
    if not isinstance(data, list):
        raise BertkitError(f"{path}: expected a JSON list of records")
    for index, record in enumerate(data):
        if not isinstance(record, dict):
            raise BertkitError(f"{path}: record {index} is not a JSON object")
        yield record


def read_parquet(path: str) -> Iterator[dict]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises several types for broken files
        raise BertkitError(f"{path}: not a readable Parquet file: {err}") from None
    check_header(list(parquet.schema_arrow.names), path, ": the file has")
    for batch in parquet.iter_batches(batch_size=4096):
        yield from batch.to_pylist()
