"""What `bertkit inspect` looks at in embed data: both texts of each pair."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core import data as data_mod
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Inspection
from bertkit.tasks.embed.pairs import scores_of

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class EmbedInspection(Inspection):
    def view(self, split, cfg: RunConfig, info: RunInfo):
        view = super().view(split, cfg, info)
        view.labels = None  # pair scores, not classes
        return view

    def checks(self, ds, tokenizer, info: RunInfo, cfg: RunConfig):
        """Every split's pair scores read as `prepare` reads them: a score that is not a number
        stops training, so it stops `inspect` (and a smoke run) too."""
        if info["scored"]:
            for role, split in ds.items():
                scores_of(split[info["label_column"]], data_mod.places(split, role))
        return {}, []
