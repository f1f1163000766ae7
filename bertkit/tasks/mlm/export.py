"""mlm-adapt's export: the vocabulary's logits at each token; the int8 check compares
perplexity, not predictions (a record needs a [MASK])."""

from __future__ import annotations

from bertkit.tasks.contract import Export


class MlmExport(Export):
    compares_predictions = False  # its records need a [MASK]; the metric (perplexity) is the check
    per_token = True  # the vocabulary's logits at each token
