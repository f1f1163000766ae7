"""The rerank task: the contract's methods (bertkit/tasks/base.py), over the package's helpers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.data.records import blank
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, empty_record
from bertkit.core.run_info import RunInfo
from bertkit.tasks.base import Task, pad_multiple
from bertkit.tasks.classify.encoding import text_of
from bertkit.tasks.embed.losses import Ranked
from bertkit.tasks.options import EvaluateOptions, PredictOptions
from bertkit.tasks.rerank.groups import (
    GROUPED,
    IGNORE,
    POINTWISE,
    GroupCollator,
    group_features,
    pair_features,
    read_groups,
    text,
)
from bertkit.tasks.rerank.losses import group_ranks, group_scores, loss_function, pair_ranks
from bertkit.tasks.rerank.scoring import pair_scores
from bertkit.tasks.scored import Scored

if TYPE_CHECKING:
    from bertkit.config import Config

METRICS = ["recall_at_1", "recall_at_5", "recall_at_10", "mrr"]


def kind_of(ds, info: dict, where: str, options: dict | None = None) -> str:
    """grouped when the data has the negative columns, pointwise when it has the label column;
    the query and passage columns are checked either way."""
    present = data_mod.columns_of(ds)
    data_mod.require_columns(
        ds, {"text_column": info["text_column"], "text_pair_column": info["text_pair_column"]}, where, options
    )
    negatives = info["negative_columns"]
    found = [c for c in negatives if c in present]
    if found and len(found) < len(negatives):
        missing = [c for c in negatives if c not in present]
        raise BertkitError(f"{where}: no column {', '.join(missing)} (rerank.negative_columns names it)")
    if found:
        return GROUPED
    if info.get("label_column") and info["label_column"] in present:
        return POINTWISE
    raise BertkitError(
        f"{where}: neither negatives ({', '.join(negatives)}: set rerank.negative_columns) nor a label column "
        f"('{info.get('label_column')}': set data.label_column). Give (query, positive, negatives) rows or "
        f"(query, passage, label) rows. Columns there: {', '.join(present)}"
    )


def scaled_labels(split, info: dict, role: str) -> list[float]:
    places = data_mod.places(split, role)
    values = data_mod.as_numbers(data_mod.column(split, info["label_column"]), places, "label")
    for value, place in zip(values, places, strict=True):
        if not 0 <= value <= info["score_max"]:
            raise BertkitError(
                f"{place}: label {value} is outside 0..{info['score_max']:g}; labels are 0/1 or scores from 0 to "
                "rerank.score_max"
            )
    return [v / info["score_max"] for v in values]


class RerankTask(Task):
    name = "rerank"
    auto_model = "AutoModelForSequenceClassification"

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
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

    def _columns(self, cfg: Config) -> dict:
        d = cfg.data
        return {
            "text_column": d.text_column,
            "text_pair_column": d.text_pair_column,
            "label_column": d.label_column,
            "negative_columns": list(cfg.rerank.negative_columns),
        }

    def setup(self, ds, cfg: Config) -> dict:
        columns = self._columns(cfg)
        kind = kind_of(ds["train"], columns, "the training data")
        score_max = None
        if kind == POINTWISE:
            places = data_mod.places(ds["train"], "train")
            values = data_mod.as_numbers(data_mod.column(ds["train"], columns["label_column"]), places, "label")
            score_max = cfg.rerank.score_max or max(1.0, max(values))
        else:
            columns["label_column"] = None
        return {
            "task": self.name,
            "kind": kind,
            "max_length": cfg.model.max_length,
            "negatives_per_query": cfg.rerank.negatives_per_query,
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

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
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

    def collator(self, tokenizer, cfg: Config):
        return GroupCollator(tokenizer, pad_multiple(cfg))

    def loss(self, info: dict, cfg: Config, train):
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

    # ------------------------------------------------------------ inference

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """Recall@k and MRR of each query's positive among its passages (all the file gives)."""
        return self.evaluate_examples(model, tokenizer, info, data, options).score()

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

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """A pair whose query or passage is blank has nothing to score."""
        columns = [options.text_field(info), options.pair_field(info) or "text_pair"]
        return any(c in record and blank(record[c]) for c in columns)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        pair = options.pair_field(info) or "text_pair"
        return empty_record(record, options.text_field(info), text_pair=record.get(pair), score=None)

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """The relevance score of each (query, passage) record: higher ranks first."""
        column, pair = options.text_field(info), options.pair_field(info) or "text_pair"
        seen = 0
        for chunk in chunks(records, self.records_per_pass):
            queries = [text_of(r, column, seen + i + 1) for i, r in enumerate(chunk)]
            passages = [text_of(r, pair, seen + i + 1, "--text-pair-column") for i, r in enumerate(chunk)]
            seen += len(chunk)
            scores = pair_scores(model, tokenizer, queries, passages, info["max_length"], options.batch_size)
            for record, score in zip(chunk, scores, strict=True):
                out = {k: record[k] for k in ("id",) if k in record}
                yield {
                    **out,
                    "text": record.get(column),
                    "text_pair": record.get(pair),
                    "score": round(float(score), 6),
                }

    def card_summary(self, info: dict) -> str:
        how = "listwise loss over groups of negatives" if info.get("kind") == GROUPED else "labelled pairs"
        return f"cross-encoder reranker ({how})"

    def cli_usage(self, where: str) -> str:
        return f"bertkit search --model BI_ENCODER --corpus corpus.txt --queries queries.txt --rerank {where}"

    def python_usage(self, where: str, info: dict | None = None) -> list[str]:
        return [
            "import torch",
            "from transformers import AutoModelForSequenceClassification, AutoTokenizer",
            f'model = AutoModelForSequenceClassification.from_pretrained("{where}")',
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
            'batch = tokenizer(["a query"], ["a passage"], padding=True, truncation=True, return_tensors="pt")',
            "with torch.no_grad():",
            "    scores = model(**batch).logits[:, 0]  # higher is more relevant",
        ]


TASK = RerankTask()
