"""The official SQuAD JSON (`data[].paragraphs[].qas[]`, v1.1 and v2.0), read into flat question
records: `{id, question, context, answers: {text: [...], answer_start: [...]}, where}`.

A missing key is reported with the file and the path inside it (`data[3].paragraphs[0].qas[2]`),
so a broken file can be fixed without hunting.
"""

from __future__ import annotations

from collections.abc import Iterator

from bertkit.data.files import load_json, read_head
from bertkit.errors import BertkitError


def looks_like_squad(path: str) -> bool:
    """Whether a .json file is in the SQuAD layout (judged from its first 64 KiB)."""

    head = read_head(path)
    return '"paragraphs"' in head and '"qas"' in head


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
