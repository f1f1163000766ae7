"""The embed task: the contract's methods (bertkit/tasks/base.py), over the package's helpers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, empty_record
from bertkit.core.pooling import POOLINGS, mean_in_token_order, pool
from bertkit.core.run_info import RESTORE, RunInfo, shown
from bertkit.tasks.base import Task, pad_multiple
from bertkit.tasks.embed.encoder import Encoder, Settings
from bertkit.tasks.embed.losses import pair_metrics, pair_results
from bertkit.tasks.embed.negatives import negative_columns
from bertkit.tasks.embed.pairs import PairCollator, group_ids, pair_encoder_class, pair_features, plain_text, scores_of
from bertkit.tasks.options import EvaluateOptions, PredictOptions
from bertkit.tasks.scored import Scored

if TYPE_CHECKING:
    from bertkit.config import Config


class EmbedTask(Task):
    name = "embed"
    auto_model = "AutoModel"
    onnx_outputs = ("sentence_embedding",)
    explain_refusal = "an embed model gives a vector, not a label to explain"

    def onnx_forward(self, model, inputs, info):
        """The pooled (and, when the bundle normalises, unit-length) vector, pooled with the
        bundle's own settings as `bertkit.tasks.embed.encoder` reads them."""
        import torch


        pooling = info.get("pooling") or "mean"
        out, mask = model(**inputs), inputs["attention_mask"]
        vectors = mean_in_token_order(out, mask) if pooling == "mean" else pool(out, mask, pooling)
        return torch.nn.functional.normalize(vectors, p=2, dim=-1) if info.get("normalize") else vectors

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
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

    def setup(self, ds, cfg: Config) -> dict:
        e, d = cfg.embed, cfg.data
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
            "task": self.name,
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

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
        from transformers import AutoModel

        encoder = models.load_weights(AutoModel, source, cfg)
        return pair_encoder_class()(encoder, info["pooling"], info["loss"], info["scale"])

    def collator(self, tokenizer, cfg: Config):
        return PairCollator(tokenizer, pad_multiple(cfg))

    def export(self, model, info: dict):
        return model.encoder

    def best_metric(self, info: dict) -> str:
        return "spearman" if info["scored"] else "mrr"

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

    # ------------------------------------------------------------ inspecting the data

    def inspect_view(self, split, cfg: Config, info: RunInfo):
        view = super().inspect_view(split, cfg, info)
        view.labels = None  # pair scores, not classes
        return view

    def inspect_checks(self, ds, tokenizer, info: RunInfo, cfg: Config):
        """Every split's pair scores read as `prepare` reads them: a score that is not a number
        stops training, so it stops `inspect` (and a smoke run) too."""
        if info["scored"]:
            for role, split in ds.items():
                scores_of(split[info["label_column"]], data_mod.places(split, role))
        return {}, []

    # ------------------------------------------------------------ inference

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """The validation metrics of an embed bundle on a pairs file."""
        return self.evaluate_examples(model, tokenizer, info, data, options).score()

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
        encoder = _encoder(model, tokenizer, info)
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

    def check_info(self, root, file, info: dict, complete: bool) -> None:
        """The pooling, when the command reads it from the bundle (`complete`: not when --pooling is
        given), and `normalize`, when present."""
        choices = ", ".join(POOLINGS)
        pooling = info.get("pooling")
        if complete and pooling is None:
            raise BertkitError(
                f"{file} gives no pooling for this embed bundle (no 'pooling' key); restore the file, "
                f"or pass --pooling ({choices})"
            )
        if complete and pooling not in POOLINGS:
            raise BertkitError(f"{file}: 'pooling' must be one of {choices}, not {shown(pooling)}; {RESTORE}")
        if "normalize" in info and not isinstance(info["normalize"], bool):
            raise BertkitError(
                f"{file}: 'normalize' must be true or false, not {shown(info['normalize'])}; {RESTORE}"
            )

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        """An empty text's vector is all zeros (its cosine with anything is 0)."""
        column = options.text_field(info)
        return empty_record(record, column, embedding=[0.0] * int(model.config.hidden_size))

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """The sentence vector of each text (for files of vectors, `bertkit embed` is the tool)."""
        encoder = _encoder(model, tokenizer, info)
        column = options.text_field(info)
        for chunk in chunks(records, self.records_per_pass):
            vectors = encoder.encode([plain_text(r.get(column)) for r in chunk], options.batch_size)
            for record, vector in zip(chunk, vectors, strict=True):
                out = {k: record[k] for k in ("id",) if k in record}
                yield {**out, "text": record.get(column), "embedding": [round(float(x), 7) for x in vector]}

    def card_summary(self, info: dict) -> str:
        norm = ", L2-normalised" if info.get("normalize") else ""
        return f"sentence embeddings: {info.get('pooling')} pooling{norm}, {info.get('loss')} loss"

    def cli_usage(self, where: str) -> str:
        return f"bertkit embed --model {where} --input texts.txt --output vectors.npy"

    def python_usage(self, where: str, info: dict | None = None) -> list[str]:
        return [
            "import torch",
            "from transformers import AutoModel, AutoTokenizer",
            f'model, tokenizer = AutoModel.from_pretrained("{where}"), AutoTokenizer.from_pretrained("{where}")',
            'batch = tokenizer(["a sentence"], padding=True, truncation=True, return_tensors="pt")',
            "with torch.no_grad():",
            "    tokens = model(**batch).last_hidden_state  # pool as bertkit.json's `pooling` says; mean:",
            '    mask = batch["attention_mask"].unsqueeze(-1)',
            "    vectors = (tokens * mask).sum(1) / mask.sum(1)",
        ]


TASK = EmbedTask()


# ---------------------------------------------------------------- features


# ---------------------------------------------------------------- scoring


def _encoder(model, tokenizer, info: dict) -> Encoder:
    settings = Settings(info.get("pooling", "mean"), bool(info.get("normalize")), info.get("max_length", 512), "bundle")
    return Encoder(model, tokenizer, settings, "bundle", "")
