"""How embed trains: (anchor, positive) pairs, scored pairs or pairs with hard negatives, a
contrastive loss over the pooled sentence vectors, retrieval scores before and after."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.errors import BertkitError
from bertkit.tasks.contract import Training, pad_multiple
from bertkit.tasks.embed.losses import pair_metrics
from bertkit.tasks.embed.negatives import negative_columns
from bertkit.tasks.embed.pairs import PairCollator, pair_encoder_class, pair_features, scores_of
from bertkit.tasks.embed.settings import EmbedConfig

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class EmbedTraining(Training):
    def lengths(self, cfg: RunConfig) -> dict[str, int]:
        pair = cfg.section(EmbedConfig).pair_max_length
        return {**super().lengths(cfg), **({"embed.pair_max_length": pair} if pair else {})}

    def load(self, cfg: RunConfig):
        if not cfg.data.text_pair_column:
            raise BertkitError(
                "embed training needs pairs: set data.text_pair_column to the column of the second text "
                "(the positive, or the other sentence of a scored pair)"
            )
        columns = {"text_column": cfg.data.text_column, "text_pair_column": cfg.data.text_pair_column}

        def read(source, role):
            ds = data_mod.load_source(source, cfg.data.text_column, cfg.data.label_column, cfg.data.text_join)
            data_mod.require_columns(ds, columns, f"{source.describe()} ({role} data)")
            for name in negative_columns(cfg.data.negative_column) if role == "train" else []:
                data_mod.require_columns(ds, {"negative_column": name}, f"{source.describe()} ({role} data)")
            data_mod.check_texts(ds, (cfg.data.text_column, cfg.data.text_pair_column), role)
            return ds

        return data_mod.load_splits(cfg, read=read)

    def setup(self, ds, cfg: RunConfig) -> dict:
        e, d = cfg.section(EmbedConfig), cfg.data
        scored = d.label_column in ds["train"].column_names
        loss = e.loss if e.loss != "auto" else ("cosent" if scored else "in_batch")
        negatives = negative_columns(d.negative_column)
        if negatives and loss != "in_batch":
            raise BertkitError(
                f"data.negative_column: hard negatives go with embed.loss in_batch, not {loss}"
                + (f" (the training data has a '{d.label_column}' score column)" if scored else "")
                + "; drop data.negative_column, or train on unscored pairs with embed.loss: in_batch"
            )
        if loss != "in_batch" and not scored:
            raise BertkitError(
                f"embed.loss {loss} needs a score for each pair: the training data has no '{d.label_column}' column "
                "(set data.label_column), or use embed.loss: in_batch"
            )
        score_max = None
        if scored:
            values = scores_of(ds["train"][d.label_column], data_mod.places(ds["train"], "train"))
            score_max = e.score_max or float(max(values))
            if score_max <= 0:
                raise BertkitError(f"the '{d.label_column}' scores are all 0 or below; set embed.score_max")
        return {
            "task": "embed",
            "pooling": e.pooling,
            "normalize": e.normalize,
            "max_length": cfg.model.max_length,
            "pair_max_length": e.pair_max_length or cfg.model.max_length,
            "scored": scored,
            "loss": loss,
            "scale": e.scale,
            "score_max": score_max,
            "text_column": d.text_column,
            "text_pair_column": d.text_pair_column,
            "label_column": d.label_column if scored else None,
            "negative_columns": negatives,
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            prepared[role] = datasets.Dataset.from_dict(pair_features(tokenizer, split, info, role))
        return datasets.DatasetDict(prepared)

    def build_model(self, source: str, info: dict, cfg: RunConfig):
        from transformers import AutoModel

        encoder = models.load_weights(AutoModel, source, cfg)
        return pair_encoder_class()(encoder, info["pooling"], info["loss"], info["scale"])

    def collator(self, tokenizer, cfg: RunConfig):
        return PairCollator(tokenizer, pad_multiple(cfg))

    def saved_model(self, model, info: dict):
        return model.encoder

    def best_metric(self, info: dict) -> str:
        return "spearman" if info.get("scored") else "mrr"

    def metric_names(self, info: dict) -> list[str]:
        if info["scored"]:
            return ["mse", "rmse", "mae", "pearson", "spearman"]
        return ["recall_at_1", "recall_at_5", "recall_at_10", "mrr"]

    scores_before_training = True

    def compare(self, before: dict, after: dict) -> dict:
        """The starting model's numbers next to the trained one's: what the training bought."""
        names = ("spearman",) if "spearman" in after else ("recall_at_1", "recall_at_5", "mrr")
        return {f"{n}_{when}": scores[n] for n in names for when, scores in (("before", before), ("after", after))}

    def metric_fn(self, info: dict, features, examples):
        groups = list(features["pair_group"])

        def scorer(prediction):
            first, second = prediction.predictions[:2]
            return pair_metrics(first, second, prediction.label_ids, groups, info["scored"])

        return scorer
