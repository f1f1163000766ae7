"""How a QA bundle is checked and run on input records: an answer span (or none, SQuAD v2) for
each question over its context."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

from bertkit.core.data.records import blank, place_of
from bertkit.core.inference import chunks, empty_record
from bertkit.core.run_info import RunInfo
from bertkit.tasks.contract import Prediction
from bertkit.tasks.contract.options import PredictOptions
from bertkit.tasks.qa.answers import answer_questions
from bertkit.tasks.qa.reading import (
    checked_record,
    complete_settings,
    fields_of,
)

if TYPE_CHECKING:
    pass


class QaPrediction(Prediction):
    records_per_pass = 256

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
