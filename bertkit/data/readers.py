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
record from its parts (`bertkit.text_columns`).
"""

from __future__ import annotations

import csv
import json
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from bertkit.data.conll import read_conll
from bertkit.data.files import STDIN, check_characters, load_json, open_binary, parse_json, text_lines
from bertkit.data.formats import PLAIN, Layout, detect_format
from bertkit.data.squad import read_squad
from bertkit.errors import BertkitError, RecordError
from bertkit.text_columns import fill_joined


class Record(dict):
    """A record that knows where it came from (`where`: file:line), for messages about it."""

    where = ""


class Blank(Record):
    """The record of a blank input line (kept where outputs align with input lines).

    `like` is the input's first record that is not blank (None when there is none), set by
    `bertkit.prediction.aligned` before it asks for the blank's result: a blank line has no
    fields of its own, so its result takes the shape of the input's (NER: token lists or text)."""

    like: dict | None = None


def placed(where: str, record: dict) -> Record:
    out = record if isinstance(record, Record) else Record(record)
    out.where = where
    return out


def place_of(record: dict, number: int) -> str:
    """`file:line` of a record read by `located_records`, else its number."""
    return getattr(record, "where", "") or f"input record {number}"


def kind_hint(fields) -> str:
    """What data with these fields looks like, when it is not what a command expects."""
    names = set(fields)
    if "tokens" in names or "entities" in names:
        return (
            " This looks like NER data (CoNLL columns, token lists or entity spans): use `bertkit train ner` / "
            "an NER model."
        )
    if {"question", "context"} <= names:
        return " This looks like question-answering data (SQuAD): use `bertkit train qa` / a QA model."
    return ""


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
        yield from _read_folder(Path(path), text_column, label_column, layout.encoding)
    elif fmt == "parquet":
        for number, record in enumerate(_read_parquet(path), start=1):
            yield f"{name}, row {number}", record
    elif fmt == "conll":
        for record in read_conll(path, tag_column=None, encoding=layout.encoding):
            yield f"{name}:{record['line']}", record
    elif fmt == "json":
        for number, record in enumerate(_read_json(path), start=1):
            yield f"{name}, record {number}", record
    elif fmt == "squad":
        for record in read_squad(path):
            yield record["where"], record
    elif fmt == "jsonl":
        yield from _read_jsonl(path, text_column, keep_blank, layout.encoding)
    elif fmt in ("csv", "tsv"):
        yield from _read_delimited(path, fmt, keep_blank, layout)
    else:
        yield from _read_lines(path, text_column, keep_blank, layout.encoding)


def _read_lines(path: str, text_column: str, keep_blank: bool, encoding: str, extra: dict | None = None):
    """One record a line: {text_column: line, **extra}."""
    name = "<stdin>" if path == STDIN else path
    for number, line in text_lines(path, encoding):
        line = line.rstrip("\r\n")
        if line.strip():
            yield f"{name}:{number}", {text_column: line, **(extra or {})}
        elif keep_blank:
            yield f"{name}:{number}", Blank({text_column: line})


def class_files_records(
    files: dict[str, str], text_column: str, label_column: str, encoding: str = "utf-8"
) -> Iterator[tuple[str, dict]]:
    """One file per class, one example per line (`files: {positive: rt-polarity.pos, ...}`)."""
    for label, path in files.items():  # all checked before any is read
        if Path(path).is_dir():
            raise BertkitError(f"{path} is a folder; the file of class '{label}' must be a file, one example a line")
        if not Path(path).is_file():
            raise BertkitError(f"data file not found: {path} (the file of class '{label}')")
    for label, path in files.items():
        found = 0
        for located in _read_lines(path, text_column, False, encoding, {label_column: label}):
            found += 1
            yield located
        if not found:  # a class would silently vanish from the data
            raise BertkitError(f"{path}: no examples in this file (the file of class '{label}'); it is empty or blank")


def count_records(path: str, fmt: str | None = None, keep_blank: bool = False, layout: Layout = PLAIN) -> int | None:
    """A cheap record count for progress bars (None when it would cost a full parse)."""
    fmt = detect_format(path, fmt)
    if path == STDIN or fmt not in ("text", "jsonl", "csv", "tsv"):  # conll: sentences span lines
        return None
    lines = sum(1 for _, line in text_lines(path, layout.encoding) if keep_blank or line.strip())
    headed = fmt in ("csv", "tsv") and (layout.columns is None or layout.header)
    return max(lines - (1 if headed else 0), 0)


# ---------------------------------------------------------------- line-level reading


def _read_delimited(
    path: str, fmt: str, keep_blank: bool = False, layout: Layout = PLAIN
) -> Iterator[tuple[str, dict]]:
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
        _check_header(header, name)
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


def _check_header(header: list[str], name: str, where: str = ":1: the header has") -> None:
    seen: dict[str, int] = {}
    for position, column in enumerate(header, start=1):
        if column in seen:
            label = f"'{column}'" if column else "an empty name"
            raise BertkitError(
                f"{name}{where} {label} twice (columns {seen[column]} and {position}); give every column its own name"
            )
        seen[column] = position


def _read_jsonl(
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


def blank(value) -> bool:
    """Whether a field holds nothing to work on (missing, or only white space)."""
    return value is None or not str(value).strip()


def text_value(value, where: str | None = None, field: str = "text") -> str:
    """A record's text field as text: null is empty, a number is written out (CSV-style), and a
    list, mapping or true/false is an error naming the record (not its Python spelling as text)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    kind = {bool: "true/false", list: "list", dict: "JSON object"}.get(type(value), type(value).__name__)
    place = f"{where}: " if where else ""
    raise RecordError(f"{place}'{field}' holds a {kind}, not text; give each record its text as a string", field)


def _read_json(path: str) -> Iterator[dict]:
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


def _read_parquet(path: str) -> Iterator[dict]:
    import pyarrow.parquet as pq

    try:
        parquet = pq.ParquetFile(path)
    except Exception as err:  # pyarrow raises several types for broken files
        raise BertkitError(f"{path}: not a readable Parquet file: {err}") from None
    _check_header(list(parquet.schema_arrow.names), path, ": the file has")
    for batch in parquet.iter_batches(batch_size=4096):
        yield from batch.to_pylist()


CLASS_FILE_SUFFIXES = (".txt", ".text")  # a class's file in a folder of class files, each also gzipped (.txt.gz)
FOLDER_LAYOUTS = (
    "one sub-folder per class (a text file per example) or one LABEL.txt file per class (an example per "
    "line; .text and .txt.gz too)"
)


def class_file_label(path: Path) -> str | None:
    """The class a file of a folder of class files holds (`neutral.txt`, `neutral.text`,
    `neutral.txt.gz`: neutral), or None for a file of another kind."""
    name = path.name[:-3] if path.name[-3:].lower() == ".gz" else path.name
    for suffix in CLASS_FILE_SUFFIXES:
        if name[-len(suffix) :].lower() == suffix and len(name) > len(suffix):
            return name[: -len(suffix)]
    return None


def _visible(folder: Path) -> list[Path]:
    """A folder's entries in name order, hidden ones (`.DS_Store`, `.git`) left out."""
    return [p for p in sorted(folder.iterdir()) if not p.name.startswith(".")]


def _read_folder(
    root: Path, text_column: str, label_column: str, encoding: str = "utf-8"
) -> Iterator[tuple[str, dict]]:
    """One sub-folder per class with one text file per example (the original IMDb layout), or one
    `LABEL.txt` file per class with one example per line. Every entry that is not hidden is read,
    or is an error naming it: nothing in the folder is silently left out."""
    if (root / "config.json").is_file() or (root / "bertkit.json").is_file():
        raise BertkitError(
            f"{root}: this folder holds a model (config.json), not data; give a data file (CSV, TSV, JSON lines, "
            f"...) or a folder with {FOLDER_LAYOUTS}"
        )
    visible = _visible(root)
    classes = [p for p in visible if p.is_dir()]
    if not visible:
        raise BertkitError(f"{root}: the folder is empty; a folder data set holds {FOLDER_LAYOUTS}")
    if not classes:
        yield from class_files_records(_class_files(root, visible), text_column, label_column, encoding)
        return
    loose = next((p for p in visible if not p.is_dir()), None)
    if loose is not None:
        raise BertkitError(
            f"{loose}: a file beside the class sub-folders of {root}, which would not be read (each sub-folder is "
            "a class, each file in it an example). Move it out of the folder, or into the sub-folder of its class"
        )
    for folder in classes:
        examples = _visible(folder)
        if not examples:
            raise BertkitError(f"{folder}: the folder of class '{folder.name}' holds no example files")
        for file in examples:
            if file.is_dir():
                raise BertkitError(
                    f"{file}: a folder inside the folder of class '{folder.name}', which would not be read; each "
                    "example is a text file directly in its class's folder"
                )
            text = _example_text(file, encoding)
            if not text.strip():
                raise BertkitError(
                    f"{file}: an empty example of class '{folder.name}' (the file holds no text); remove it or fill it"
                )
            yield str(file), {text_column: text.strip(), label_column: folder.name, "file": file.name}


def _example_text(file: Path, encoding: str) -> str:
    """The whole text of one example's file (gzip looked through, as for every data file)."""
    handle = open_binary(str(file))
    try:
        data = handle.read()
    except (OSError, EOFError, zlib.error) as err:
        raise BertkitError(f"{file}: cannot read: {err}") from None
    finally:
        handle.close()
    try:
        return data.decode(encoding).removeprefix("\ufeff")
    except UnicodeDecodeError as err:
        raise BertkitError(
            f"{file}: not {encoding} text ({err.reason} at byte {err.start}); name the encoding "
            "(data.encoding, e.g. latin-1)"
        ) from None


def _class_files(root: Path, files: list[Path]) -> dict[str, str]:
    """{label: path} of a folder of class files; a file that is not one (`neutral.tsv`, `neutral`,
    a README), or a second file of one class, is an error naming it."""
    found: dict[str, Path] = {}
    for file in files:
        label = class_file_label(file)
        if label is None or label.lower() == "readme":
            what = "a README" if (label or file.name.split(".")[0]).lower() == "readme" else "not a class file"
            raise BertkitError(
                f"{file}: {what} in the folder of class files {root}, which would not be read. Each file of the "
                f"folder is one class, named LABEL{', LABEL'.join(CLASS_FILE_SUFFIXES)} or LABEL.txt.gz, an "
                "example a line: rename it, or move it out of the folder"
            )
        if label in found:
            raise BertkitError(
                f"{file}: a second file of class '{label}' (with {found[label].name}) in {root}; keep one file per "
                "class, or give them as data.train: {files: {...}} under labels of their own"
            )
        found[label] = file
    return {label: str(path) for label, path in found.items()}
