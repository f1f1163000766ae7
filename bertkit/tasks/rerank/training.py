"""How rerank trains: (query, positive, negatives) groups with a listwise loss, or labelled
(query, passage) pairs with binary cross-entropy; recall and MRR of the positives."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.errors import BertkitError
from bertkit.tasks.contract import Training, pad_multiple
from bertkit.tasks.embed.losses import Ranked
from bertkit.tasks.rerank.groups import (
    GROUPED,
    IGNORE,
    POINTWISE,
    GroupCollator,
    group_features,
    kind_of,
    pair_features,
    read_groups,
    scaled_labels,
    text,
)
from bertkit.tasks.rerank.losses import group_ranks, group_scores, loss_function, pair_ranks
from bertkit.tasks.rerank.settings import RerankConfig

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


METRICS = ["recall_at_1", "recall_at_5", "recall_at_10", "mrr"]


class RerankTraining(Training):
    def load(self, cfg: RunConfig):
        if not cfg.data.text_pair_column:
            raise BertkitError(
                "rerank training needs passages: set data.text_pair_column to the passage column (the positive "
                "of (query, positive, negatives) rows, or the passage of (query, passage, label) rows)"
            )
        info = self._columns(cfg)
        kinds = {}

        def read(source, role):
            ds = data_mod.load_source(source, cfg.data.text_column, cfg.data.label_column, cfg.data.text_join)
            kinds[role] = kind_of(ds, info, f"{source.describe()} ({role} data)")
            if kinds[role] != kinds["train"]:
                raise BertkitError(
                    f"{source.describe()} ({role} data): {kinds[role]} rows, but the training data has "
                    f"{kinds['train']} rows; give both splits the same columns"
                )
            data_mod.check_texts(ds, (cfg.data.text_column, cfg.data.text_pair_column), role)
            return ds

        return data_mod.load_splits(cfg, read=read)

    def _columns(self, cfg: RunConfig) -> dict:
        d = cfg.data
        return {
            "text_column": d.text_column,
            "text_pair_column": d.text_pair_column,
            "label_column": d.label_column,
            "negative_columns": list(cfg.section(RerankConfig).negative_columns),
        }

    def setup(self, ds, cfg: RunConfig) -> dict:
        columns = self._columns(cfg)
        kind = kind_of(ds["train"], columns, "the training data")
        score_max = None
        if kind == POINTWISE:
            places = data_mod.places(ds["train"], "train")
            values = data_mod.as_numbers(data_mod.column(ds["train"], columns["label_column"]), places, "label")
            score_max = cfg.section(RerankConfig).score_max or max(1.0, max(values))
        else:
            columns["label_column"] = None
        return {
            "task": "rerank",
            "kind": kind,
            "max_length": cfg.model.max_length,
            "negatives_per_query": cfg.section(RerankConfig).negatives_per_query,
            "score_max": score_max,
            "text_join": cfg.data.text_join,
            **columns,
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            if info["kind"] == GROUPED:
                groups = read_groups(split, info, role, info["negatives_per_query"])
                features = group_features(tokenizer, groups, info["max_length"])
            else:
                queries = [text(t) for t in data_mod.column(split, info["text_column"])]
                passages = [text(t) for t in data_mod.column(split, info["text_pair_column"])]
                labels = scaled_labels(split, info, role)
                features = pair_features(tokenizer, queries, passages, labels, info["max_length"])
            prepared[role] = datasets.Dataset.from_dict(features)
        return datasets.DatasetDict(prepared)

    def build_model(self, source: str, info: dict, cfg: RunConfig):
        from transformers import AutoModelForSequenceClassification

        return models.load_weights(
            AutoModelForSequenceClassification,
            source,
            cfg,
            ignore_mismatched_sizes=True,
            num_labels=1,
            id2label={0: "score"},
            label2id={"score": 0},
        )

    def collator(self, tokenizer, cfg: RunConfig):
        return GroupCollator(tokenizer, pad_multiple(cfg))

    def loss(self, info: dict, cfg: RunConfig, train):
        return loss_function(info["kind"] == GROUPED)

    def reduce_logits(self, logits, labels):
        """Each evaluation batch's scores in its groups' shape, [B, G], before the Trainer gathers
        them: it cuts the last batch to the rows the dataset has left, which for a flat list of
        pairs would drop pairs. Pairs keep their flat shape."""
        if labels.dim() == 2:
            return group_scores(logits.float().reshape(-1), labels)
        return logits

    def metric_names(self, info: dict) -> list[str]:
        return METRICS

    def best_metric(self, info: dict) -> str:
        return "mrr"

    def metric_fn(self, info: dict, features, examples):
        grouped = info["kind"] == GROUPED
        queries = None if grouped else list(features["query_group"])

        def scorer(prediction):
            scores = np.asarray(prediction.predictions, dtype=np.float64)
            labels = np.asarray(prediction.label_ids, dtype=np.float64)
            if grouped:  # the gathered batches are padded with -100: those places hold no pair
                ranks = group_ranks(np.where(labels == IGNORE, -np.inf, scores))
            else:
                ranks = pair_ranks(scores.reshape(-1), labels, queries)
            return Ranked(ranks).score()

        return scorer
