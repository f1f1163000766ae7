"""What a reader yields: records (dicts) that know where they came from, the `Blank` of a blank
input line, and the checks every command makes of a record's fields (`blank`, `text_value`)."""

from __future__ import annotations

from bertkit.core.errors import RecordError


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
