"""A QA bundle scored on a labelled file: each question's answer (a `Scored`), exact match and F1."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Evaluation
from bertkit.tasks.contract.options import EvaluateOptions
from bertkit.tasks.qa.answers import answer_questions
from bertkit.tasks.qa.reading import (
    complete_settings,
    read_examples,
    unanswerable_ids,
    warn_unanswerable,
)
from bertkit.tasks.qa.scored import Answered
from bertkit.tasks.qa.settings import QaConfig

if TYPE_CHECKING:
    pass


class QaEvaluation(Evaluation):
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
