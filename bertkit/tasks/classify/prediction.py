"""How a classify bundle is checked and run on input records: one result per record (a label and
its score, labels over the threshold, or a score), long texts truncated or read in windows."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from bertkit.core.data.records import blank
from bertkit.core.errors import BertkitError
from bertkit.core.inference import chunks, empty_record, forward
from bertkit.core.run_info import RESTORE, RunInfo, check_labels, shown
from bertkit.tasks.classify import calibration
from bertkit.tasks.classify.calibration import probabilities
from bertkit.tasks.classify.encoding import encode_columns, feature_rows, text_at, text_of, window_features
from bertkit.tasks.classify.labels import MULTI, PROBLEM_TYPES, REGRESSION, check_label_values, label_name, split_multi
from bertkit.tasks.contract import Prediction
from bertkit.tasks.contract.options import PredictOptions


class ClassifyPrediction(Prediction):
    def predict(
        self, model, tokenizer, info: RunInfo, records: Iterable[dict], options: PredictOptions
    ) -> Iterator[dict]:
        """One output record per input record, in input order."""
        text_column = options.text_field(info)
        pair_column = options.pair_field(info)
        threshold = options.threshold or info.get("threshold", 0.5)
        windows = options.long_text == "windows"
        batch_size = options.batch_size
        seen = 0
        for chunk in chunks(records, self.records_per_pass):
            texts = [text_of(r, text_column, seen + i + 1) for i, r in enumerate(chunk)]
            pairs = (
                [text_of(r, pair_column, seen + i + 1, "--text-pair-column") for i, r in enumerate(chunk)]
                if pair_column
                else None
            )
            seen += len(chunk)
            if windows and pairs is None:
                feats, owner = window_features(tokenizer, texts, info, options.stride)
            else:
                feats = feature_rows(encode_columns(tokenizer, texts, pairs, info))
                owner = list(range(len(texts)))
            grouped: list[list] = [[] for _ in chunk]
            for index, row in zip(owner, forward(model, tokenizer, feats, batch_size), strict=True):
                grouped[index].append(row)
            for record, mine in zip(chunk, grouped, strict=True):
                yield self.describe(record, text_column, pair_column, mine, info, threshold, windows and pairs is None)

    def gold_fields(self, info: RunInfo) -> list[str]:
        return [info.get("label_column") or "label"]

    def read_gold(self, name: str, value, info: RunInfo, where: str):
        """The label as training and evaluate read it (`labels.label_name`: `1.0` and `01` are `1`),
        so it compares with the prediction whatever the file's format; each label of a multi-label
        example likewise, in the input's form (a list, or text joined by the separator); a
        regression's score as it is. What no label can be (an object, a list inside a list, NaN,
        infinity) is refused naming `where`, as training and evaluate refuse it."""
        if value is None or info["problem_type"] == REGRESSION:
            return value
        separator = info.get("label_separator") if info["problem_type"] == MULTI else None
        check_label_values([value], [where], name, separator)
        if isinstance(value, list):
            return [label_name(x) for x in value]
        if separator:
            return separator.join(split_multi([value], separator)[0])
        return label_name(value)

    def check_record(self, record, tokenizer, info: RunInfo, options: PredictOptions, where: str, seen: dict) -> None:
        """The text (and the pair's second text) there, and text."""
        text_at(record, options.text_field(info), where)
        pair_column = options.pair_field(info)
        if pair_column:
            text_at(record, pair_column, where, "--text-pair-column")

    def check_info(self, root, file, info: dict, complete: bool) -> None:
        check_labels(root, file, info)
        if info.get("problem_type") not in PROBLEM_TYPES:
            raise BertkitError(
                f"{file}: 'problem_type' must be one of {', '.join(PROBLEM_TYPES)}, not "
                f"{shown(info.get('problem_type'))}; {RESTORE}"
            )
        wrong = calibration.check(info.get("calibration"), len(info.get("labels") or []))
        if wrong:
            raise BertkitError(f"{file}: 'calibration': {wrong}; {RESTORE}")

    def is_empty(self, record: dict, info: RunInfo, options: PredictOptions) -> bool:
        """A text (and its pair, if any) with nothing in it."""
        columns = [options.text_field(info)]
        columns += [c for c in [options.pair_field(info)] if c]
        return all(c in record for c in columns) and all(blank(record[c]) for c in columns)

    def empty_result(self, model, record: dict, info: RunInfo, options: PredictOptions) -> dict:
        text_column = options.text_field(info)
        pair_column = options.pair_field(info)
        fields = {"text_pair": record.get(pair_column)} if pair_column else {}
        if options.long_text == "windows" and not pair_column:
            fields["windows"] = 0
        if info["problem_type"] == REGRESSION:
            return empty_record(record, text_column, **fields, score=None)
        found = {"labels": []} if info["problem_type"] == MULTI else {"label": None, "score": None}
        return empty_record(record, text_column, **fields, **found, scores=dict.fromkeys(info["labels"]))

    def describe(self, record, text_column, pair_column, logits: list, info: dict, threshold, windows=False) -> dict:
        out = {k: record[k] for k in ("id",) if k in record}
        out["text"] = record.get(text_column)
        if pair_column:
            out["text_pair"] = record.get(pair_column)
        problem, labels = info["problem_type"], info["labels"]
        stacked = np.stack(logits)
        if problem == REGRESSION:
            out["score"] = round(float(stacked.reshape(-1).mean()), 6)
            return out
        probs = probabilities(stacked, info).mean(axis=0)  # calibrated as the bundle says; windows averaged
        if problem == MULTI:
            out["labels"] = [labels[i] for i in np.flatnonzero(probs > threshold)]
        else:
            best = int(probs.argmax())
            out["label"], out["score"] = labels[best], round(float(probs[best]), 6)
        out["scores"] = {name: round(float(p), 6) for name, p in zip(labels, probs, strict=True)}
        if windows:  # every record says how many windows it took, so table outputs keep the column
            out["windows"] = len(logits)
        return out
