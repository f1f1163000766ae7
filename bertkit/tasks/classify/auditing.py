"""The audit part of classify (`bertkit audit`): single-label, multi-label and pairs of texts.
The flags come from cleanlab (`cleanlab.filter` for one label an example, its
`multilabel_classification` for several) on the out-of-fold probabilities."""

from __future__ import annotations

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core.errors import BertkitError
from bertkit.core.inference import forward
from bertkit.tasks.classify import calibration
from bertkit.tasks.classify.encoding import encode_texts, feature_rows
from bertkit.tasks.classify.labels import MULTI, REGRESSION, encode_labels, label_name
from bertkit.tasks.contract.auditing import N_JOBS, Audit, Examples, Flag, whole_training_data


class ClassifyAudit(Audit):
    def examples(self, cfg) -> Examples:
        splits = whole_training_data(self.training, cfg)
        train = splits["train"]
        info = self.training.setup(splits, cfg)  # the route and the labels, said as train says them
        if info["problem_type"] == REGRESSION:
            raise BertkitError(
                "bertkit audit finds wrong labels among classes, and this data is a regression (number labels). "
                "Set classify.problem_type: single_label if the numbers are classes"
            )
        places = data_mod.places(train, "train")
        encoded = encode_labels(train[cfg.data.label_column], info, places)
        columns = [c for c in (cfg.data.text_column, cfg.data.text_pair_column, cfg.data.label_column) if c]
        records = [{c: row[c] for c in columns} for row in train]
        texts = train[cfg.data.text_column]
        pairs = train[cfg.data.text_pair_column] if cfg.data.text_pair_column else None
        shown = [f"{a} ⟶ {b}" for a, b in zip(texts, pairs, strict=True)] if pairs else list(texts)
        if info["problem_type"] == MULTI:
            given = [np.flatnonzero(row).tolist() for row in encoded]
            strata = None  # folds of several labels an example are not stratified
        else:
            given, strata = list(encoded), [info["labels"][g] for g in encoded]
        return Examples(records, places, shown, given, list(info["labels"]), strata, info=info)

    def fold_settings(self, examples: Examples) -> dict:
        info = examples.info
        return {
            "classify.strategy": info["strategy"],  # decided on the whole data: every fold takes it
            "classify.problem_type": info["problem_type"],
            "data.labels": examples.names,  # a fold without a rare label still has its column
            # a fold scores on its own training examples (it has no other validation): a temperature
            # fitted there would sharpen the scores, and cleanlab reads them as the model gives them
            "classify.calibration": calibration.NONE,
        }

    def probabilities(self, model, tokenizer, info, examples: Examples, indices, batch_size: int) -> list:
        import datasets

        ds = datasets.Dataset.from_list([examples.records[i] for i in indices])
        features = feature_rows(encode_texts(tokenizer, ds, info))
        logits = np.stack(forward(model, tokenizer, features, batch_size)).astype(np.float64)
        probs = calibration.probabilities(logits, info)
        order = [list(info["labels"]).index(name) for name in examples.names]
        return list(probs[:, order])

    def issues(self, examples: Examples, probabilities: list) -> list[Flag]:
        probs = np.stack(probabilities)
        names = examples.names
        if examples.info["problem_type"] == MULTI:
            from cleanlab.multilabel_classification.filter import find_label_issues
            from cleanlab.multilabel_classification.rank import get_label_quality_scores

            given = [list(g) for g in examples.given]
            ranked = find_label_issues(
                labels=given, pred_probs=probs, return_indices_ranked_by="self_confidence", n_jobs=N_JOBS
            )
            quality = get_label_quality_scores(given, probs)
            threshold = examples.info.get("threshold") or 0.5
            return [
                Flag(int(i), [names[j] for j in given[i]], [names[j] for j in np.flatnonzero(probs[i] > threshold)],
                     float(quality[i]))
                for i in ranked
            ]  # fmt: skip
        from cleanlab.filter import find_label_issues
        from cleanlab.rank import get_label_quality_scores

        given = np.asarray(examples.given, dtype=int)
        ranked = find_label_issues(given, probs, return_indices_ranked_by="self_confidence", n_jobs=N_JOBS)
        quality = get_label_quality_scores(given, probs)
        flags = []
        for i in ranked:
            others = probs[i].copy()
            others[given[i]] = -1.0  # the label it should have instead: the likeliest other one
            flags.append(Flag(int(i), names[given[i]], names[int(others.argmax())], float(quality[i])))
        return flags

    def fixed(self, record: dict, flags: list[Flag], examples: Examples) -> dict:
        column = examples.info["label_column"]
        suggested = flags[0].suggested
        if isinstance(suggested, list):
            separator = examples.info.get("label_separator") or ","
            value = record[column]
            # the file's own form: a list stays a list, a joined text is joined again
            return {**record, column: suggested if isinstance(value, list) else separator.join(suggested)}
        return {**record, column: label_name(suggested)}
