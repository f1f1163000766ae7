"""Plain-text corpora for masked-LM training and vocabularies: one document or sentence a line
(or, for next-sentence prediction, documents of one sentence a line between blank lines), from
one file, several files (a glob pattern), a folder of text files, JSON lines / CSV / Parquet with
a text column, or a Hub data set."""

from __future__ import annotations

import glob
from collections.abc import Iterator
from pathlib import Path

from bertkit.core.data import load_source, require_columns
from bertkit.core.data.formats import PLAIN, Layout, detect_format
from bertkit.core.data.readers import located_records
from bertkit.core.data.records import Blank, text_value
from bertkit.core.errors import BertkitError
from bertkit.core.progress import console

TEXT_SUFFIXES = (".txt", ".text", ".txt.gz", ".text.gz")


def corpus_files(path: str) -> list[str]:
    """The files a corpus path names: itself, the text files under a folder, or a glob's matches."""
    if any(c in path for c in "*?["):
        found = sorted(p for p in glob.glob(path, recursive=True) if Path(p).is_file())
        if not found:
            raise BertkitError(f"{path}: no file matches this pattern")
        return found
    p = Path(path)
    if p.is_dir():
        return _folder_texts(p)
    if not p.exists():
        raise BertkitError(f"data file not found: {path}")
    return [path]


def _folder_texts(folder: Path) -> list[str]:
    """The text files under a corpus folder, at any depth, in name order. Hidden entries
    (`.DS_Store`, `.git/`) are left out; so are other files that are not text by their suffix (a
    README.md beside the corpus), and the log names them: none is left out silently."""
    found, other = [], []
    for file in sorted(folder.rglob("*")):
        if any(part.startswith(".") for part in file.relative_to(folder).parts) or file.is_dir():
            continue
        (found if file.name.lower().endswith(TEXT_SUFFIXES) else other).append(str(file))
    if not found:
        raise BertkitError(f"{folder}: a corpus folder needs .txt files inside, and it has none")
    if other:

        shown = ", ".join(other[:5]) + (f" and {len(other) - 5} more" if len(other) > 5 else "")
        console.print(
            f"{folder}: {len(other)} file(s) left out of the corpus, not text by their names (.txt, .text, or "
            f"either gzipped): {shown}"
        )
    return found


def read_lines(
    path: str,
    text_column: str = "text",
    fmt: str | None = None,
    keep_blank: bool = False,
    option: str = "data.text_column",
    layout=None,
) -> Iterator[str]:
    """The texts of a corpus path, line by line (or record by record), in order, stripped; blank
    ones are skipped, or (`keep_blank`, where results align with lines) given as ''."""

    for file in corpus_files(path):
        kind = detect_format(file, fmt if fmt not in (None, "folder") else None)
        if kind == "folder":
            kind = "text"
        located = located_records(file, kind, text_column=text_column, keep_blank=keep_blank, layout=layout or PLAIN)
        for number, (where, record) in enumerate(located, start=1):
            if text_column not in record and not isinstance(record, Blank):
                fields = ", ".join(record)
                raise BertkitError(
                    f"{where}: record {number} has no '{text_column}' field (fields: {fields}); set {option}"
                )
            text = text_value(record.get(text_column), where, text_column).strip()  # a list or object: named
            if text or keep_blank:
                yield text


def sentences_of(text) -> list[str]:
    """The non-blank lines of a text, stripped: the sentences of one document."""
    return [line.strip() for line in str(text or "").splitlines() if line.strip()]


def read_documents(path: str, text_column: str = "text", fmt: str | None = None, layout=None) -> Iterator[list[str]]:
    """The documents of a corpus path, each as its sentences. In plain text files a document is a
    run of non-blank lines (one sentence a line) between blank lines, and every file ends one; in
    tables (JSON lines, CSV, Parquet) each record's text is one document, one sentence a line."""

    for file in corpus_files(path):
        kind = detect_format(file, fmt if fmt not in (None, "folder") else None)
        lines = read_lines(file, text_column, fmt, keep_blank=True, layout=layout)
        if kind not in ("text", "folder"):
            yield from (doc for doc in map(sentences_of, lines) if doc)
            continue
        document: list[str] = []
        for line in lines:
            if line:
                document.append(line)
            elif document:
                yield document
                document = []
        if document:
            yield document


def load_corpus(source, text_column: str = "text", documents: bool = False):
    """One split of a corpus as a Dataset with a single `text` column (read from `text_column` of a
    table). With `documents`, one row per document (`read_documents`), its sentences joined by
    line breaks."""
    import datasets


    column = text_column
    if source.hub:
        ds = load_source(source, column)
        require_columns(ds, {"text_column": column}, source.describe())
        if documents:
            texts = ["\n".join(doc) for doc in map(sentences_of, ds[column]) if doc]
        else:
            texts = [str(t).strip() for t in ds[column] if t is not None and str(t).strip()]
    elif source.files:
        raise BertkitError(f"{source.describe()}: one file per class is for classification; give the corpus as path")
    else:

        layout = Layout.of(source)
        if documents:
            texts = ["\n".join(doc) for doc in read_documents(source.path, column, source.format, layout)]
        else:
            texts = list(read_lines(source.path, column, source.format, layout=layout))
    if not texts:
        raise BertkitError(f"{source.describe()}: no text in it (the file is empty, or every line is blank)")
    return datasets.Dataset.from_dict({"text": texts})
