"""A classify bundle scored on a labelled file: each example's prediction (a `Scored`)."""

from __future__ import annotations

import numpy as np

from bertkit.core import data as data_mod
from bertkit.core.errors import BertkitError
from bertkit.core.inference import forward
from bertkit.core.run_info import RunInfo
from bertkit.tasks.classify.encoding import encode_texts, feature_rows
from bertkit.tasks.classify.labels import REGRESSION, encode_labels
from bertkit.tasks.classify.scored import scored
from bertkit.tasks.contract import Evaluation
from bertkit.tasks.contract.options import EvaluateOptions
from bertkit.tasks.contract.scored import Scored


class ClassifyEvaluation(Evaluation):
    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Scored:
        """The model's prediction for each example of the labelled file `data`."""
        info = {**info, **options.column_options()}
        if not info.get("labels") and info.get("problem_type") != REGRESSION:
            raise BertkitError("the model has no label names, so its predictions cannot be scored")
        ds, references = self.labelled(data, info, options)
        text_column = info.get("text_column") or "text"
        features = feature_rows(encode_texts(tokenizer, ds, {**info, "text_column": text_column}))
        logits = forward(model, tokenizer, features, options.batch_size)
        return scored(np.stack(logits), references, info)

    def labelled(self, data: str, info: dict, options: EvaluateOptions):
        """The examples of the labelled file `data` (sampled as asked) and their encoded labels."""
        text_column = info.get("text_column") or "text"
        label_column = info.get("label_column") or "label"
        ds = data_mod.load_source(options.source(data), text_column, label_column, options.text_join(info))
        ds = options.sampled(ds)
        columns = {
            "text_column": text_column,
            "text_pair_column": info.get("text_pair_column"),
            "label_column": label_column,
        }
        data_mod.require_columns(ds, columns, data, options.column_settings())
        return ds, encode_labels(ds[label_column], info, data_mod.places(ds, data))

    def data_format(self, source) -> str:
        return data_mod.table_format(source)
