"""An embed bundle scored on a labelled file: retrieval of each pair's second text, or the
correlation of scored pairs (a `Scored`)."""

from __future__ import annotations

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Evaluation
from bertkit.tasks.contract.options import EvaluateOptions
from bertkit.tasks.contract.scored import Scored
from bertkit.tasks.embed.encoder import bundle_encoder
from bertkit.tasks.embed.losses import pair_results
from bertkit.tasks.embed.pairs import group_ids, plain_text, scores_of


class EmbedEvaluation(Evaluation):
    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Scored:
        """Each pair's cosine beside its score, or each anchor's rank of its own positive."""
        info = {**info, **options.column_options()}
        source = options.source(data)
        ds = options.sampled(data_mod.load_source(source, info["text_column"], info.get("label_column") or "label"))
        data_mod.require_columns(
            ds,
            {"text_column": info["text_column"], "text_pair_column": info["text_pair_column"]},
            data,
            options.column_settings(),
        )
        encoder = bundle_encoder(model, tokenizer, info)
        batch = options.batch_size
        first = encoder.encode([plain_text(t) for t in ds[info["text_column"]]], batch)
        second = encoder.encode([plain_text(t) for t in ds[info["text_pair_column"]]], batch)
        scored = bool(info.get("scored"))
        if scored:
            data_mod.require_columns(ds, {"label_column": info["label_column"]}, data, options.column_settings())
        places = data_mod.places(ds, data)
        labels = np.asarray(scores_of(ds[info["label_column"]], places)) / info["score_max"] if scored else None
        groups = group_ids([plain_text(t) for t in ds[info["text_pair_column"]]])
        return pair_results(first, second, labels, groups, scored)
