"""How QA trains: SQuAD-style examples read, contexts cut into windows with the answer's token
positions, the model and the SQuAD metrics."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError
from bertkit.tasks.contract import Training
from bertkit.tasks.qa.answers import encode, extract_answers, feature_columns, score_answers
from bertkit.tasks.qa.reading import (
    read_examples,
    unanswerable_ids,
    warn_unanswerable,
)
from bertkit.tasks.qa.settings import QaConfig

if TYPE_CHECKING:
    from bertkit.core.run_config import RunConfig


class QaTraining(Training):
    def load(self, cfg: RunConfig):
        def read(source: DataSource, role: str):
            import datasets

            return datasets.Dataset.from_list(read_examples(source, cfg.section(QaConfig), role))

        return data_mod.load_splits(cfg, read)

    def setup(self, ds, cfg: RunConfig) -> dict:
        unanswerable = unanswerable_ids(ds["train"])
        version_2 = cfg.section(QaConfig).version_2
        if version_2 is None:
            version_2 = bool(unanswerable)
        elif not version_2 and unanswerable:
            raise BertkitError(
                f"{len(unanswerable)} training question(s) have no answer (first: {unanswerable[0]}), but "
                "qa.version_2 is false (SQuAD v1: every question has an answer). Set qa.version_2: true "
                "to learn to abstain, or remove those questions."
            )
        for role in ("validation", "test"):
            if role in ds and not version_2:
                warn_unanswerable(f"{role} data", unanswerable_ids(ds[role]))
        return {
            "task": "qa",
            "max_length": cfg.model.max_length,
            "version_2": version_2,
            "qa": {**cfg.section(QaConfig).model_dump(), "version_2": version_2},
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            answers = list(split["answers"])
            features = encode(tokenizer, list(split["question"]), list(split["context"]), info, answers)
            prepared[role] = datasets.Dataset.from_list(features)
        return datasets.DatasetDict(prepared)

    def build_model(self, source: str, info: dict, cfg: RunConfig):
        from transformers import AutoModelForQuestionAnswering

        return models.load_weights(AutoModelForQuestionAnswering, source, cfg)

    def best_metric(self, info: dict) -> str:
        return "f1"

    def metric_names(self, info: dict) -> list[str]:
        v2 = [f"{part}_{m}" for part in ("has_ans", "no_ans", "best") for m in ("exact_match", "f1")]
        return ["exact_match", "f1", *(v2 if info["version_2"] else [])]

    def metric_fn(self, info: dict, features, examples):
        """Official SQuAD scores of a Trainer prediction on `features` (windows of `examples`)."""
        columns = feature_columns(features)
        records = examples.to_list()
        contexts = [r["context"] for r in records]

        def score(prediction):
            starts, ends = prediction.predictions[:2]
            rows = [np.stack([s, e], -1) for s, e in zip(starts, ends, strict=True)]
            return score_answers(extract_answers(columns, rows, contexts, info["qa"], info["version_2"]), records, info)

        return score
