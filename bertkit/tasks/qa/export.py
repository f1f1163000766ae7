"""QA's export: start and end logits per token; the metrics count to 100."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.tasks.contract import Export

if TYPE_CHECKING:
    pass


class QaExport(Export):
    metric_scale = 100.0  # SQuAD's exact match and F1
    outputs = ("start_logits", "end_logits")

    per_token = True

    def forward(self, model, inputs, info):
        out = model(**inputs)
        return out.start_logits, out.end_logits
