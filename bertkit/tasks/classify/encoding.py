"""Texts (and text pairs) as model features: truncated as in training, or cut into overlapping
windows for long texts.
"""

from __future__ import annotations

from bertkit.core import tokenization
from bertkit.core.data.records import kind_hint, place_of, text_value
from bertkit.core.errors import BertkitError, RecordError
from bertkit.core.text_columns import quoted_fields


def encode_texts(tokenizer, split, info: dict) -> dict:
    texts = [text_value(t, None, info["text_column"]) for t in split[info["text_column"]]]
    pair_column = info.get("text_pair_column")
    pairs = [text_value(t, None, pair_column) for t in split[pair_column]] if pair_column else None
    return encode_columns(tokenizer, texts, pairs, info)


def encode_columns(tokenizer, texts: list[str], pairs: list[str] | None, info: dict) -> dict:
    """Token ids for each text (or pair), cut to max_length as `info['truncation']` says."""
    max_length, mode = info["max_length"], info.get("truncation", "head")
    if pairs is not None or mode == "head":
        tokenizer.truncation_side = "left" if mode == "tail" else "right"
        args = (texts, pairs) if pairs is not None else (texts,)
        return dict(tokenizer(*args, truncation=True, max_length=max_length))
    budget = max_length - tokenization.special_budget(tokenizer)
    ids = tokenizer(texts, add_special_tokens=False)["input_ids"]
    rows = [tokenization.wrap(tokenizer, tokenization.keep(x, budget, mode, info.get("head_tokens"))) for x in ids]
    return {key: [row[key] for row in rows] for key in rows[0]} if rows else {}


def window_features(tokenizer, texts: list[str], info: dict, stride: int | None) -> tuple[list[dict], list[int]]:
    """Every text cut into overlapping windows of max_length; returns features and their text index."""
    budget = info["max_length"] - tokenization.special_budget(tokenizer)
    stride = budget // 4 if stride is None else stride
    if stride >= budget:
        raise BertkitError(f"--stride {stride} must be smaller than the window ({budget} tokens)")
    features, owner = [], []
    for index, ids in enumerate(tokenizer(texts, add_special_tokens=False)["input_ids"]):
        for piece in tokenization.windows(ids, budget, stride):
            features.append(tokenization.wrap(tokenizer, piece))
            owner.append(index)
    return features, owner


def feature_rows(columns: dict) -> list[dict]:
    keys = list(columns)
    return [dict(zip(keys, values, strict=True)) for values in zip(*columns.values(), strict=True)]


def text_of(record: dict, column: str, number: int, option: str = "--text-column") -> str:
    return text_at(record, column, place_of(record, number), option)


def text_at(record: dict, column: str, where: str, option: str = "--text-column") -> str:
    """The text of `record[column]`, or a `RecordError` naming `where` and the field."""
    if column not in record:

        raise RecordError(
            f"{where}: no {quoted_fields(column)} field (fields: {', '.join(map(str, record))}); set {option}."
            + kind_hint(record)
            + _data_as_header(record),
            column,
        )
    return text_value(record[column], where, column)


def _data_as_header(record: dict) -> str:
    """A CSV / TSV input without a header row, read as if its first row were one."""
    if any(name.strip().replace(".", "").replace("-", "").isdigit() or len(name.split()) > 4 for name in record):
        return (
            " Its first row looks like data, not a header: if the file has none, name its columns in order with "
            "--columns, e.g. --columns label,title,description."
        )
    return ""
