"""The qa task: the contract's methods (bertkit/tasks/base.py), over the package's helpers."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core import models
from bertkit.core.data.records import blank, place_of
from bertkit.core.data_settings import DataSource
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, empty_record
from bertkit.core.run_info import RunInfo
from bertkit.tasks.base import Task
from bertkit.tasks.options import EvaluateOptions, PredictOptions
from bertkit.tasks.qa import inspecting
from bertkit.tasks.qa.answers import answer_questions, encode, extract_answers, feature_columns, score_answers
from bertkit.tasks.qa.explaining import EXPLAINER
from bertkit.tasks.qa.reading import (
    checked_record,
    complete_settings,
    fields_of,
    read_examples,
    unanswerable_ids,
    warn_unanswerable,
)
from bertkit.tasks.qa.scored import Answered
from bertkit.tasks.qa.settings import QaConfig

if TYPE_CHECKING:
    from bertkit.config import Config


class QaTask(Task):
    name = "qa"
    auto_model = "AutoModelForQuestionAnswering"
    onnx_outputs = ("start_logits", "end_logits")
    onnx_per_token = True

    def explainer(self):

        return EXPLAINER

    def onnx_forward(self, model, inputs, info):
        out = model(**inputs)
        return out.start_logits, out.end_logits
    records_per_pass = 256

    # ------------------------------------------------------------ data

    def load(self, cfg: Config):
        def read(source: DataSource, role: str):
            import datasets

            return datasets.Dataset.from_list(read_examples(source, cfg.qa, role))

        return data_mod.load_splits(cfg, read)

    def setup(self, ds, cfg: Config) -> dict:
        unanswerable = unanswerable_ids(ds["train"])
        version_2 = cfg.qa.version_2
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
            "task": self.name,
            "max_length": cfg.model.max_length,
            "version_2": version_2,
            "qa": {**cfg.qa.model_dump(), "version_2": version_2},
        }

    def prepare(self, ds, tokenizer, info: dict):
        import datasets

        prepared = {}
        for role, split in ds.items():
            answers = list(split["answers"])
            features = encode(tokenizer, list(split["question"]), list(split["context"]), info, answers)
            prepared[role] = datasets.Dataset.from_list(features)
        return datasets.DatasetDict(prepared)

    # ------------------------------------------------------------ model and training

    def build_model(self, source: str, info: dict, cfg: Config):
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

    # ------------------------------------------------------------ inspecting the data

    def inspect_view(self, split, cfg: Config, info: RunInfo):

        return inspecting.view(split)

    def inspect_checks(self, ds, tokenizer, info: RunInfo, cfg: Config):

        return inspecting.checks(ds, tokenizer, info, cfg)

    # ------------------------------------------------------------ evaluate and predict

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        return self.evaluate_examples(model, tokenizer, info, data, options).score()

    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Answered:
        """The model's answer to each question of `data`, beside the gold answers."""
        info = complete_settings(info)
        source = options.source(data)
        records = options.sampled(read_examples(source, QaConfig.model_validate(info.get("qa") or {}), data))
        if not info["version_2"]:
            warn_unanswerable(data, unanswerable_ids(records))
        questions, contexts = [r["question"] for r in records], [r["context"] for r in records]
        found = answer_questions(model, tokenizer, info, questions, contexts, options.batch_size)
        return Answered(found, records, info)

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """A record whose question and context are both there and both blank. One without either
        field is not empty: `predict` refuses it, naming the field (as it refuses a question
        without a context, or the reverse)."""
        fields = fields_of(record, complete_settings(info)["qa"])
        return all(fields[k] in record and blank(record[fields[k]]) for k in ("question", "context"))

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """A question and a context, neither empty, and an id not used before in the input."""
        checked_record(record, fields_of(record, complete_settings(info)["qa"]), where, seen)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        id_field = complete_settings(info)["qa"]["id_field"]
        out = {"id": str(record[id_field])} if record.get(id_field) is not None else {}
        extra = {"alternatives": []} if options.n_best else {}
        return {**out, **empty_record({}, None, answer=None, score=None, start=None, end=None, **extra)}

    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """{question, context (, id)} -> {id, answer, score, start, end} (+ alternatives on request)."""
        info = complete_settings(info)
        qa = info["qa"]
        alternatives = options.n_best
        number = 0
        for chunk in chunks(records, self.records_per_pass):
            checked = []
            for record in chunk:
                number += 1
                # ids unique across the input: `check_record`, which `predict` runs on every record first
                checked.append(checked_record(record, fields_of(record, qa), place_of(record, number), {}))
            ids, questions, contexts = (list(column) for column in zip(*checked, strict=True))
            batch = options.batch_size
            found = answer_questions(model, tokenizer, info, questions, contexts, batch, keep=alternatives)
            for key, answer in zip(ids, found, strict=True):
                out = {} if key is None else {"id": key}
                out.update({k: answer[k] for k in ("answer", "score", "start", "end")})
                if alternatives:
                    out["alternatives"] = answer["alternatives"]
                yield out

    def card_summary(self, info: dict) -> str:
        return "SQuAD v2: may answer nothing" if info.get("version_2") else "SQuAD v1: always answers"

    def cli_usage(self, where: str) -> str:
        return f"bertkit predict --model {where} --input questions.jsonl --output predictions.jsonl"

    def python_usage(self, where: str, info: dict | None = None) -> list[str]:
        return [  # transformers 5 has no question-answering pipeline
            "from transformers import AutoModelForQuestionAnswering, AutoTokenizer",
            f'model = AutoModelForQuestionAnswering.from_pretrained("{where}")',
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
        ]


TASK = QaTask()


# ---------------------------------------------------------------- reading


# ---------------------------------------------------------------- windows


# ---------------------------------------------------------------- answers from logits
