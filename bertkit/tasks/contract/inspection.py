"""The inspect part of the task contract (`Inspection`): the texts, labels and places of one split
as a `View`, which bertkit/inspection counts on (duplicates, leakage, labels, lengths), and the
numbers only the task has."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bertkit.core.data import WHERE, column

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig
    from bertkit.core.run_info import RunInfo


@dataclass
class View:
    """What inspection looks at in one split: a text per example (pairs joined with a tab), its
    labels (one for single-label data, several for multi-label or NER, none for regression or
    plain text), and where each example came from."""

    texts: list[str]
    labels: list[list[str]] | None = None
    pairs: list[str] | None = None  # the second texts, tokenized with the first for lengths
    places: list[str] = field(default_factory=list)

    def keys(self) -> list[str]:
        """The text an example is known by: both texts of a pair."""
        if self.pairs is None:
            return self.texts
        return [f"{a}\t{b}" for a, b in zip(self.texts, self.pairs, strict=True)]


class Inspection:
    """The inspect part of the task contract: what `bertkit inspect` looks at in a split (`view`)
    and the numbers only this task has (`checks`). The default reads the configured text (and pair)
    column and the label column's values as labels."""

    def view(self, split, cfg: RunConfig, info: RunInfo) -> View:
        """What `bertkit inspect` looks at in one split: by default the configured text (and pair)
        column, and the label column's values as labels when the split has one."""
        d = cfg.data
        texts = [str(t) if t is not None else "" for t in column(split, d.text_column)]
        pairs = None
        if d.text_pair_column and d.text_pair_column in split.column_names:
            pairs = [str(t) if t is not None else "" for t in column(split, d.text_pair_column)]
        labels = None
        if d.label_column in split.column_names:
            labels = [[str(x) for x in v] if isinstance(v, list) else [str(v)] for v in column(split, d.label_column)]
        places = column(split, WHERE) if WHERE in split.column_names else []
        return View(texts, labels, pairs, places)

    def checks(self, ds: dict, tokenizer, info: RunInfo, cfg: RunConfig) -> tuple[dict, list[str]]:
        """Numbers only this task has (NER's tag scheme, QA's windows), and warnings about them."""
        return {}, []

    def imbalance_hint(self, cfg: RunConfig) -> str:
        """The settings that answer imbalanced labels in this task (said with the imbalance found)."""
        return "resampling the data (this task has no class weights)"

    def truncation_warning(self, share: float, longest: int, max_length: int) -> str | None:
        """What to say when `share` of the texts (the longest `longest` tokens) are cut at
        model.max_length; None when this task does not cut texts (it reads them in windows)."""
        return None
