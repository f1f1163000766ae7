"""The official SQuAD JSON (`data[].paragraphs[].qas[]`, v1.1 and v2.0), read into flat question
records: `{id, question, context, answers: {text: [...], answer_start: [...]}, where}`.

A missing key is reported with the file and the path inside it (`data[3].paragraphs[0].qas[2]`),
so a broken file can be fixed without hunting.
"""

from __future__ import annotations

import json
import re
import zlib
from collections.abc import Iterator

from bertkit.core.data.files import load_json, open_binary
from bertkit.core.errors import BertkitError

FIRST_LOOK = 65536  # bytes read first; more (8 times as many each time) while the layout is undecided
# one JSON token: a string (complete), a structural character, or a bare word (number, true, null)
_TOKEN = re.compile(r'\s*(?:("[^"\\]*(?:\\.[^"\\]*)*")|([{}\[\]:,])|([^\s{}\[\]:,"]+))', re.S)


def looks_like_squad(path: str) -> bool:
    """Whether a JSON file is in the SQuAD layout: an object whose `data` list holds articles with
    `paragraphs`. Decided from the document's structure as far as the first article's keys, read
    as far as that takes (a first context of any length), never from a fixed-size sample."""
    try:
        handle = open_binary(path)
    except BertkitError:
        return False
    try:
        raw, size = b"", FIRST_LOOK
        while True:
            more = handle.read(size - len(raw))
            raw += more
            verdict = squad_layout(raw.decode("utf-8", errors="replace").removeprefix("\ufeff"))
            if verdict is not None:
                return verdict
            if len(raw) < size:  # the whole file was read, and it never said
                return False
            size *= 8
    except (OSError, EOFError, zlib.error):
        return False  # the reader reports what is wrong with the file
    finally:
        handle.close()


def squad_layout(text: str) -> bool | None:
    """Whether the JSON text `text` (the start of a document) is in the SQuAD layout: True at the
    first article's `paragraphs` key, False as soon as the structure says otherwise (a list, a
    list of objects under another key than `data`, an article without paragraphs, a document
    without `data`), None when `text` ends first. A list of plain values under another key
    (`"meta": [1, 2]`) is passed over."""
    stack: list[list] = []  # per open object or list: [kind ('{' or '['), its current key or index]
    want_key = False
    position = 0
    while True:
        found = _TOKEN.match(text, position)
        if found is None:
            return None
        position = found.end()
        string, mark, word = found.groups()
        in_article = len(stack) == 3 and stack[0][1] == "data" and stack[1][0] == "["
        if string is not None:
            if not stack:
                return False
            if want_key and stack[-1][0] == "{":
                try:
                    stack[-1][1] = json.loads(string)
                except ValueError:
                    stack[-1][1] = string
                want_key = False
                if in_article and stack[-1][1] == "paragraphs":
                    return True
        elif word is not None:
            if not stack:
                return False
        elif mark in "{[":
            if not stack and mark == "[":
                return False  # a list of records
            if mark == "{" and len(stack) == 2 and stack[1][0] == "[" and stack[0][1] != "data":
                return False  # an object holding its records under another name than SQuAD's `data`
            stack.append([mark, None if mark == "{" else 0])
            want_key = mark == "{"
        elif mark in "}]":
            if not stack:
                return False
            stack.pop()
            if not stack or in_article:  # the document, or the first article, ended without paragraphs
                return False
        elif mark == ",":
            if not stack:
                return False
            if stack[-1][0] == "[":
                stack[-1][1] += 1
            want_key = stack[-1][0] == "{"


def read_squad(path: str) -> Iterator[dict]:

    root = load_json(path)
    articles = _get(root, "data", list, path, "the top level")
    for a, article in enumerate(articles):
        where_article = f"data[{a}]"
        for p, paragraph in enumerate(_get(article, "paragraphs", list, path, where_article)):
            where_paragraph = f"{where_article}.paragraphs[{p}]"
            context = _get(paragraph, "context", str, path, where_paragraph)
            for q, qa in enumerate(_get(paragraph, "qas", list, path, where_paragraph)):
                where = f"{where_paragraph}.qas[{q}]"
                answers = _get(qa, "answers", list, path, where) if not qa.get("is_impossible") else []
                texts, starts = [], []
                for k, answer in enumerate(answers):
                    texts.append(_get(answer, "text", str, path, f"{where}.answers[{k}]"))
                    starts.append(_get(answer, "answer_start", int, path, f"{where}.answers[{k}]"))
                yield {
                    "id": str(_get(qa, "id", (str, int), path, where)),
                    "question": _get(qa, "question", str, path, where),
                    "context": context,
                    "answers": {"text": texts, "answer_start": starts},
                    "where": f"{path}: {where}",
                }


def _get(node, key: str, kind, path: str, where: str):
    if not isinstance(node, dict):
        raise BertkitError(f"{path}: {where} should be a JSON object, found {type(node).__name__}")
    if key not in node:
        raise BertkitError(
            f"{path}: {where} has no '{key}' (keys there: {', '.join(node) or 'none'}); "
            "the SQuAD layout is data[].paragraphs[].{context, qas[].{id, question, answers[].{text, answer_start}}}"
        )
    value = node[key]
    if not isinstance(value, kind) or isinstance(value, bool):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise BertkitError(f"{path}: {where}.{key} should be {names}, found {type(value).__name__}: {value!r:.60}")
    return value
