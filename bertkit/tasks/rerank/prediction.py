"""How a rerank bundle is run on input records: a relevance score per (query, passage) pair."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from bertkit.core.data.records import blank
from bertkit.core.inference import chunks, empty_record
from bertkit.core.run_info import RunInfo
from bertkit.tasks.classify.encoding import text_of
from bertkit.tasks.contract import Prediction
from bertkit.tasks.contract.options import PredictOptions
from bertkit.tasks.rerank.scoring import pair_scores


class RerankPrediction(Prediction):
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
