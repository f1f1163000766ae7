"""What a user asks of a trained model besides the data: the options of `bertkit predict` and
`bertkit evaluate`, typed, each with its one default. The CLI builds them; `Prediction.predict`,
`Evaluation.evaluate` and their helpers read them, and never invent a default of their own.

A column left as None means "the one the model was trained on" (the bundle's `text_column`,
`text_pair_column`, `label_column`), then the usual name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bertkit.core.data.formats import Layout
from bertkit.core.data_settings import DataSource

LONG_TEXT = ("truncate", "windows")


@dataclass(frozen=True)
class ModelOptions:
    """What every use of a model shares: the fields holding the texts, and the batch size."""

    text_column: str | None = None
    text_pair_column: str | None = None
    batch_size: int = 32
    columns: tuple[str, ...] | None = None  # the names of a headerless CSV / TSV input's columns
    encoding: str = "utf-8"  # the input's text encoding

    def text_field(self, info: Mapping[str, Any]) -> str:
        """The field holding the text: the option, else the model's, else "text"."""
        return self.text_column or info.get("text_column") or "text"

    def pair_field(self, info: Mapping[str, Any]) -> str | None:
        """The field holding the second text of a pair (None: the model reads single texts)."""
        return self.text_pair_column or info.get("text_pair_column")

    def text_join(self, info: Mapping[str, Any]) -> str:
        """What goes between the texts of several text columns: as the model was trained."""
        return info.get("text_join") or " "

    def layout(self):
        """How the input file is written (`bertkit.core.data.readers.Layout`)."""

        return Layout(self.columns, None, self.encoding)

    def column_options(self) -> dict[str, str]:
        """The column options the user set, by their info key (to lay over the bundle's)."""
        names = {"text_column": self.text_column, "text_pair_column": self.text_pair_column}
        label = getattr(self, "label_column", None)
        return {key: value for key, value in {**names, "label_column": label}.items() if value}


@dataclass(frozen=True)
class PredictOptions(ModelOptions):
    """`bertkit predict`'s options."""

    long_text: str = "truncate"  # truncate: cut as in training; windows: average overlapping windows
    stride: int | None = None  # tokens shared by consecutive windows (None: a quarter of a window)
    threshold: float | None = None  # multi-label: None is the model's own
    n_best: int = 0  # QA: alternative answers listed
    top_k: int | None = None  # fill-mask: None is the model's own (5)
    output_format: str = "jsonl"  # how the results are written (NER writes CoNLL its own way)
    keep_gold: bool = True  # a labelled input's answers stay in the results (the prediction as predicted_*)

    def __post_init__(self):
        if self.long_text not in LONG_TEXT:
            raise ValueError(f"long_text must be one of {', '.join(LONG_TEXT)}, not {self.long_text!r}")


@dataclass(frozen=True)
class EvaluateOptions(ModelOptions):
    """`bertkit evaluate`'s options."""

    label_column: str | None = None
    data_format: str | None = None  # None: from the file's extension
    max_samples: int | None = None  # score a seeded sample of at most this many examples (None: all)
    # False where the columns cannot be set (export's int8 check reads --check-data with the
    # bundle's own columns): an error naming a missing column then says where it comes from
    columns_settable: bool = True

    def column_settings(self) -> dict[str, str]:
        """What sets each column, for an error naming a missing one: `bertkit evaluate`'s options,
        or the bundle's training config where the command has no such options."""
        flags = {key: "--" + key.replace("_", "-") for key in ("text_column", "text_pair_column", "label_column")}
        if self.columns_settable:
            return flags
        return {key: f"the bundle's data.{key}" for key in flags}

    def sampled(self, items):
        """`items` (a list or a `datasets.Dataset`), or a seeded sample of `max_samples` of them in
        their file order."""
        if self.max_samples is None or len(items) <= self.max_samples:
            return items
        import random

        chosen = sorted(random.Random(0).sample(range(len(items)), self.max_samples))
        return items.select(chosen) if hasattr(items, "select") else [items[i] for i in chosen]

    def source(self, path: str):
        """The labelled file as a data source, with its format and layout."""

        columns = list(self.columns) if self.columns else None
        return DataSource(path=path, format=self.data_format, columns=columns, encoding=self.encoding)
