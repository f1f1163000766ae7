"""Which format a data file is in: from its extension, or (when the extension does not say) from its
content, with the reason printed; and how a source's files are laid out (`Layout`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bertkit.core.data.files import STDIN
from bertkit.core.data.sniffing import sniff_format
from bertkit.core.data.squad import looks_like_squad
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console

FORMATS = ("csv", "tsv", "jsonl", "json", "squad", "parquet", "text", "folder", "conll")
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "json",
    ".parquet": "parquet",
    ".pq": "parquet",
    ".txt": "text",
    ".text": "text",
    ".conll": "conll",
    ".iob": "conll",
    ".bio": "conll",
}


@dataclass(frozen=True)
class Layout:
    """How a source's files are written, where the format alone does not say: the names of a
    headerless table's columns, whether a header row comes first (None: yes, unless `columns`
    is given; then a first row that repeats the names is skipped), the text encoding."""

    columns: tuple[str, ...] | None = None
    header: bool | None = None
    encoding: str = "utf-8"
    columns_for_tables_only: bool = False  # `columns` set for every split (data.columns), not this file

    @classmethod
    def of(cls, source) -> Layout:
        """The layout a config's `DataSource` describes."""
        columns = tuple(source.columns) if source.columns else None
        return cls(columns, source.header, source.encoding or "utf-8", source.columns_inherited())


PLAIN = Layout()


def told_by(path: str) -> str:
    """What decided a file's format when none was given: `its name`, or `its content` (for
    messages that name the format assumed)."""
    suffixes = [s.lower() for s in Path(path).suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    return "its name" if suffixes and suffixes[-1] in EXTENSIONS else "its content"


def detect_format(path: str, explicit: str | None = None) -> str:
    if not path:
        raise BertkitError("an empty path: give a file (or - for standard input)")
    if explicit:
        if explicit not in FORMATS:
            raise BertkitError(f"unknown data format '{explicit}' for {path}; use one of {FORMATS}")
        return explicit
    if path == STDIN:
        return "text"
    p = Path(path)
    if p.is_dir():
        return "folder"
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    fmt = EXTENSIONS.get(suffixes[-1]) if suffixes else None
    if fmt is None and not p.is_file():
        raise BertkitError(f"{path}: cannot tell the format from the name; set it (one of {', '.join(FORMATS)})")
    if fmt is None:

        fmt, why = sniff_format(path)
        if fmt is None:
            raise BertkitError(
                f"{path}: cannot tell the format from the name or the content ({why}); set it "
                f"(`format:` on the source, one of {', '.join(FORMATS)})"
            )

        console.print(f"{path}: read as {fmt} ({why})")
    if fmt == "json" and p.is_file():
        fmt = "squad" if looks_like_squad(path) else fmt
    return fmt
