"""What `bertkit inspect` looks at in classify data: the labels as the task reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core import data as data_mod
from bertkit.core.run_info import RunInfo
from bertkit.tasks.classify.labels import MULTI, REGRESSION, encode_labels, split_multi
from bertkit.tasks.contract import Inspection

if TYPE_CHECKING:
    from bertkit.config import Config


class ClassifyInspection(Inspection):
    def view(self, split, cfg: Config, info: RunInfo):
        """Labels as the task reads them: each of a multi-label example's, none for regression."""
        view = super().view(split, cfg, info)
        if info["problem_type"] == REGRESSION:
            view.labels = None
        elif info["problem_type"] == MULTI:
            view.labels = split_multi(data_mod.column(split, cfg.data.label_column), cfg.data.label_separator)
        return view

    def checks(self, ds, tokenizer, info: RunInfo, cfg: Config):
        """Every split's labels encoded as `prepare` will: a label of validation or test that the
        training data (or data.labels) does not have stops training, so it stops `inspect` too."""
        for role, split in ds.items():
            encode_labels(split[info["label_column"]], info, data_mod.places(split, role))
        return {}, []
