"""Rows as the cross-encoder reads them: (query, positive, negatives) groups or labelled
(query, passage) pairs; their features (each pair tokenized as one sequence); the batches."""

from __future__ import annotations

from bertkit.core import data as data_mod
from bertkit.core.errors import BertkitError

GROUPED, POINTWISE = "grouped", "pointwise"
IGNORE = -100  # label of a group's unused places (fewer negatives than negatives_per_query)


def text(value) -> str:
    return "" if value is None else str(value)


def negatives_of(row: dict, columns: list[str], positive: str, where: str) -> list[str]:
    """A row's negative passages, in the order given: each column a text or a list of texts (null
    and blank ones skipped); a negative equal to the positive is dropped (it is not one)."""
    found = []
    for name in columns:
        value = row.get(name)
        items = value if isinstance(value, (list, tuple)) else [value]
        for item in items:
            if isinstance(item, (dict, list, tuple)):
                raise BertkitError(f"{where}: '{name}' holds {type(item).__name__}s; give texts or a list of texts")
            if item is not None and str(item).strip() and str(item) != positive:
                found.append(str(item))
    return found


def read_groups(split, info: dict, role: str, limit: int | None) -> list[tuple[str, list[str]]]:
    """(query, [positive, negative, ...]) for each row, at most `limit` negatives each."""
    rows = split.select_columns([c for c in split.column_names if c != data_mod.WHERE]).to_list()
    wheres = data_mod.places(split, role)
    groups = []
    for row, where in zip(rows, wheres, strict=True):
        positive = text(row.get(info["text_pair_column"]))
        negatives = negatives_of(row, info["negative_columns"], positive, where)
        groups.append((text(row.get(info["text_column"])), [positive, *negatives[:limit]]))
    if not any(len(passages) > 1 for _, passages in groups):
        raise BertkitError(
            f"the {role} data has no negatives: every row's {', '.join(info['negative_columns'])} is empty (or "
            "repeats the positive). Give negatives (e.g. from `bertkit mine-negatives`), or (query, passage, "
            "label) rows"
        )
    return groups


def group_features(tokenizer, groups: list[tuple[str, list[str]]], max_length: int) -> dict:
    """One feature row per query: its pairs' token ids (a list per pair, the positive first) and
    labels [1, 0, 0, ...]; the collator pads groups of unequal size."""
    flat = [(query, passage) for query, passages in groups for passage in passages]
    encoded = encode_pairs(tokenizer, [q for q, _ in flat], [p for _, p in flat], max_length)
    columns: dict = {name: [] for name in encoded}
    start = 0
    for _, passages in groups:
        for name, values in encoded.items():
            columns[name].append(values[start : start + len(passages)])
        start += len(passages)
    columns["labels"] = [[1.0] + [0.0] * (len(passages) - 1) for _, passages in groups]
    return columns


def pair_features(tokenizer, queries: list[str], passages: list[str], labels: list[float], max_length: int) -> dict:
    """One feature row per labelled pair, with its query's group number (its place among the
    split's distinct queries, for the ranking metrics)."""
    columns = dict(encode_pairs(tokenizer, queries, passages, max_length))
    columns["labels"] = [float(x) for x in labels]
    seen: dict[str, int] = {}
    columns["query_group"] = [seen.setdefault(q, len(seen)) for q in queries]
    return columns


def encode_pairs(tokenizer, queries: list[str], passages: list[str], max_length: int) -> dict:
    """(query, passage) as one sequence, `[CLS] query [SEP] passage [SEP]`; a pair too long loses
    tokens from its longer side first (the passage, nearly always), so the query stays whole."""
    return dict(tokenizer(queries, passages, truncation="longest_first", max_length=max_length))


class GroupCollator:
    """Batches of either kind of row for the plain sequence-classification model. Groups are
    flattened into one batch of pairs (the model sees B*G sequences) and their labels become a
    [B, G] matrix, -100 where a group is shorter than the longest; the loss puts the scores back
    in that shape. Pairs are padded as usual."""

    def __init__(self, tokenizer, pad_to_multiple_of=None):
        self.tokenizer, self.multiple = tokenizer, pad_to_multiple_of

    def __call__(self, features: list[dict]) -> dict:
        import torch

        names = [n for n in self.tokenizer.model_input_names if n in features[0]]
        grouped = isinstance(features[0]["labels"], (list, tuple))
        if grouped:
            rows = [{n: f[n][i] for n in names} for f in features for i in range(len(f["labels"]))]
            width = max(len(f["labels"]) for f in features)
            labels = [list(f["labels"]) + [IGNORE] * (width - len(f["labels"])) for f in features]
        else:
            rows = [{n: f[n] for n in names} for f in features]
            labels = [f["labels"] for f in features]
        batch = dict(self.tokenizer.pad(rows, return_tensors="pt", pad_to_multiple_of=self.multiple))
        batch["labels"] = torch.tensor(labels, dtype=torch.float)
        return batch


def kind_of(ds, info: dict, where: str, options: dict | None = None) -> str:
    """grouped when the data has the negative columns, pointwise when it has the label column;
    the query and passage columns are checked either way."""
    present = data_mod.columns_of(ds)
    data_mod.require_columns(
        ds, {"text_column": info["text_column"], "text_pair_column": info["text_pair_column"]}, where, options
    )
    negatives = info["negative_columns"]
    found = [c for c in negatives if c in present]
    if found and len(found) < len(negatives):
        missing = [c for c in negatives if c not in present]
        raise BertkitError(f"{where}: no column {', '.join(missing)} (rerank.negative_columns names it)")
    if found:
        return GROUPED
    if info.get("label_column") and info["label_column"] in present:
        return POINTWISE
    raise BertkitError(
        f"{where}: neither negatives ({', '.join(negatives)}: set rerank.negative_columns) nor a label column "
        f"('{info.get('label_column')}': set data.label_column). Give (query, positive, negatives) rows or "
        f"(query, passage, label) rows. Columns there: {', '.join(present)}"
    )


def scaled_labels(split, info: dict, role: str) -> list[float]:
    places = data_mod.places(split, role)
    values = data_mod.as_numbers(data_mod.column(split, info["label_column"]), places, "label")
    for value, place in zip(values, places, strict=True):
        if not 0 <= value <= info["score_max"]:
            raise BertkitError(
                f"{place}: label {value} is outside 0..{info['score_max']:g}; labels are 0/1 or scores from 0 to "
                "rerank.score_max"
            )
    return [v / info["score_max"] for v in values]
