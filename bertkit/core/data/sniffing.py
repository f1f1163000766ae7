"""Telling a file's format from its content, for files whose extension does not say (`.txt`,
`.dat`, no extension) or says too little (a `.txt` or `.tsv` file of CoNLL columns). Each answer
comes with the reason, which bertkit prints, so a guess is never silent."""

from __future__ import annotations

import json
import re
from itertools import islice

from bertkit.core.data.files import open_binary
from bertkit.core.data.squad import looks_like_squad

SAMPLE_LINES = 400
# a tag in IOB1/IOB2/BIOES/BILOU (B-PER, I_LOC, S-ORG, ...) or O
TAG = re.compile(r"^(?:O|[BIESLU][-_]\S+)$")


def _sample(path: str, encoding: str = "utf-8") -> list[str]:
    handle = open_binary(path)
    try:
        return [raw.decode(encoding, errors="replace").rstrip("\r\n") for raw in islice(handle, SAMPLE_LINES)]
    finally:
        handle.close()


def conll_columns(lines: list[str], path: str | None = None, encoding: str = "utf-8") -> tuple[int, str] | None:
    """(columns, why) when the lines read as CoNLL: every non-blank line (`-DOCSTART-` aside) has
    the same number (two or more) of white-space separated columns, and the last column holds tags,
    not all O. When `lines` are the file `path`'s first SAMPLE_LINES and fit but for tagging
    every token O (a long start without entities), the file is read on for its first entity tag."""
    rows = [line.split() for line in lines if line.strip() and not line.startswith("-DOCSTART-")]
    if not rows:
        return None
    widths = {len(row) for row in rows}
    if len(widths) != 1 or (width := widths.pop()) < 2:
        return None
    tags = [row[-1] for row in rows]
    if not all(TAG.match(tag) for tag in tags):
        return None
    if all(tag == "O" for tag in tags):
        found = _first_entity_tag(path, encoding, width) if path and len(lines) >= SAMPLE_LINES else None
        if found is None:
            return None
        tags.append(found)
    blank = sum(1 for line in lines if not line.strip())
    sentences = f", {blank} blank line(s) between sentences" if blank else ""
    return width, f"every line has {width} columns and the last one holds tags such as {_example(tags)}{sentences}"


def _first_entity_tag(path: str, encoding: str, width: int) -> str | None:
    """The first tag other than O after the sample, on lines that keep reading as CoNLL of
    `width` columns; None when a line does not, or the file ends first."""
    handle = open_binary(path)
    try:
        for raw in islice(handle, SAMPLE_LINES, None):
            row = raw.decode(encoding, errors="replace").split()
            if not row or row[0] == "-DOCSTART-":
                continue
            if len(row) != width or not TAG.match(row[-1]):
                return None
            if row[-1] != "O":
                return row[-1]
        return None
    finally:
        handle.close()


def _example(tags: list[str]) -> str:
    return next(tag for tag in tags if tag != "O")


def looks_like_conll(path: str, encoding: str = "utf-8") -> str | None:
    """Why `path` reads as CoNLL, or None when it does not."""
    found = conll_columns(_sample(path, encoding), path, encoding)
    return found[1] if found else None


def sniff_format(path: str, encoding: str = "utf-8") -> tuple[str | None, str]:
    """(format, why) for a file whose extension says nothing; (None, why) when nothing fits."""
    lines = _sample(path, encoding)
    filled = [line for line in lines if line.strip()]
    if not filled:
        return None, "it is empty"
    if all(_json_object(line) for line in filled):
        if len(filled) == 1 and looks_like_squad(path):  # SQuAD's own files are one line of JSON
            return "json", "it is one JSON document in the SQuAD layout"
        return "jsonl", "every line is a JSON object"
    if filled[0].lstrip().startswith(("[", "{")):
        return "json", "it starts like a JSON document"
    found = conll_columns(lines, path, encoding)
    if found:
        return "conll", found[1]
    tabs = {line.count("\t") for line in filled}
    if len(tabs) == 1 and (count := tabs.pop()) >= 1:
        return "tsv", f"every line has {count + 1} tab-separated fields"
    return "text", "no tabs, JSON or CoNLL columns: one text a line"


def _json_object(line: str) -> bool:
    if not line.lstrip().startswith("{"):
        return False
    try:
        return isinstance(json.loads(line), dict)
    except json.JSONDecodeError:
        return False
