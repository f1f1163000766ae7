"""Text taken from several columns (`data.text_column: [title, description]`).

The config turns the list into one name, `title + description`, and that name travels like any
other column name (in the run's description, in `--text-column`): the readers fill it in on each
record from the named parts, joined with `data.text_join`. A record that has a field called
exactly `title + description` keeps its own.
"""

from __future__ import annotations

SEPARATOR = " + "


def joined_name(columns: list[str]) -> str:
    return SEPARATOR.join(columns)


def parts_of(name: str) -> list[str]:
    """The columns a joined name stands for ([name] for a plain column)."""
    return name.split(SEPARATOR) if SEPARATOR in name else [name]


def fill_joined(record: dict, name: str, join: str = " ") -> dict:
    """`record` with its `name` field made from its parts, when `name` joins several columns and
    the record has at least one of them. A part the record lacks counts as empty, as a null or
    white-space-only part does: it is left out, so no separator dangles (JSON lines often leave
    out an empty field; a split whose records never have a part is refused by the column check)."""
    parts = parts_of(name)
    if len(parts) < 2 or name in record or not any(part in record for part in parts):
        return record
    texts = [record.get(part) for part in parts]
    if any(isinstance(v, bool) or (v is not None and not isinstance(v, (str, int, float))) for v in texts):
        return record  # a list or mapping: left for the text check to report
    record[name] = join.join(str(v).strip() for v in texts if v is not None and str(v).strip())
    return record


def quoted_fields(name: str) -> str:
    """`'text'`, or for a joined name its parts: `'title' or 'description'` (for messages)."""
    return " or ".join(f"'{part}'" for part in parts_of(name))
