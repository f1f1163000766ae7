"""A rerank bundle scored on a labelled file: the rank of each query's positive (a `Scored`)."""

from __future__ import annotations

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core.errors import BertkitError
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Evaluation
from bertkit.tasks.contract.options import EvaluateOptions
from bertkit.tasks.contract.scored import Scored
from bertkit.tasks.embed.losses import Ranked
from bertkit.tasks.rerank.groups import GROUPED, kind_of, read_groups, scaled_labels, text
from bertkit.tasks.rerank.losses import group_ranks, group_scores, pair_ranks
from bertkit.tasks.rerank.scoring import pair_scores


class RerankEvaluation(Evaluation):
    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Scored:
        info = {**info, **options.column_options()}
        info.setdefault("negative_columns", ["negatives"])
        info["label_column"] = info.get("label_column") or "label"
        ds = options.sampled(data_mod.load_source(options.source(data), info["text_column"], info["label_column"]))
        kind = kind_of(ds, info, data, options.column_settings())
        length, batch = info.get("max_length", 512), options.batch_size
        if kind == GROUPED:
            groups = read_groups(ds, info, data, None)
            flat = [(q, p) for q, passages in groups for p in passages]
            scores = pair_scores(model, tokenizer, [q for q, _ in flat], [p for _, p in flat], length, batch)
            width = max(len(p) for _, p in groups)
            labels = np.full((len(groups), width), -100.0)
            for row, (_, passages) in enumerate(groups):
                labels[row, : len(passages)] = 0.0
            return Ranked(group_ranks(group_scores(scores, labels)))
        info.setdefault("score_max", 1.0)
        info["score_max"] = info["score_max"] or 1.0
        queries = [text(t) for t in data_mod.column(ds, info["text_column"])]
        passages = [text(t) for t in data_mod.column(ds, info["text_pair_column"])]
        labels = scaled_labels(ds, info, data)
        scores = pair_scores(model, tokenizer, queries, passages, length, batch)
        seen: dict[str, int] = {}
        ranks = pair_ranks(scores, labels, [seen.setdefault(q, len(seen)) for q in queries])
        if not len(ranks):
            raise BertkitError(f"{data}: no query has both a relevant (label >= 0.5) and an irrelevant passage")
        return Ranked(ranks)
