"""Scoring (query, passage) pairs with a trained cross-encoder: one number per pair, higher is
more relevant. The raw logit, not a probability: a listwise-trained model's scores rank passages
of one query and are not calibrated across queries."""

from __future__ import annotations

import numpy as np

from bertkit.core.inference import forward
from bertkit.tasks.rerank.groups import encode_pairs


def pair_scores(model, tokenizer, queries: list[str], passages: list[str], max_length: int, batch_size: int):
    """The model's score of each (query, passage) pair, in order (a numpy float array)."""
    if not queries:
        return np.zeros(0)
    encoded = encode_pairs(tokenizer, queries, passages, max_length)
    features = [{name: values[i] for name, values in encoded.items()} for i in range(len(queries))]
    scores = forward(model, tokenizer, features, batch_size, output=lambda out, inputs, rows: out.logits[:, 0])
    return np.asarray(scores, dtype=np.float64)
