"""What `bertkit inspect` looks at in classify data: the labels as the task reads them."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core import data as data_mod
from bertkit.core.run_info import RunInfo
from bertkit.tasks.classify.labels import MULTI, REGRESSION, encode_labels, split_multi
from bertkit.tasks.classify.settings import ClassifyConfig
from bertkit.tasks.contract import Inspection

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class ClassifyInspection(Inspection):
    def imbalance_hint(self, cfg: RunConfig) -> str:
        per = {"multi_label": "per label's positives", "single_label": "per class"}.get(
            cfg.section(ClassifyConfig).problem_type, "per class; per label's positives for multi-label"
        )
        return f"classify.class_weights: balanced ({per}) and / or classify.loss: focal"

    def truncation_warning(self, share: float, longest: int, max_length: int) -> str | None:
        return (
            f"{share:.1%} of the texts are longer than model.max_length ({max_length}) and will be cut (longest: "
            f"{longest} tokens); raise max_length or use classify.truncation: head+tail"
        )

    def view(self, split, cfg: RunConfig, info: RunInfo):
        """Labels as the task reads them (`label_name`: CSV `01`, `1.0` and `+1` are the one label
        `1`, as training counts them): each of a multi-label example's, none for regression."""
        view = super().view(split, cfg, info)
        if info["problem_type"] == REGRESSION:
            view.labels = None
        elif cfg.data.label_column in split.column_names:
            separator = cfg.data.label_separator if info["problem_type"] == MULTI else None
            view.labels = split_multi(data_mod.column(split, cfg.data.label_column), separator)
        return view

    def checks(self, ds, tokenizer, info: RunInfo, cfg: RunConfig):
        """Every split's labels encoded as `prepare` will: a label of validation or test that the
        training data (or data.labels) does not have stops training, so it stops `inspect` too."""
        for role, split in ds.items():
            encode_labels(split[info["label_column"]], info, data_mod.places(split, role))
        return {}, []
