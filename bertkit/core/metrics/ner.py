"""Entity-level precision / recall / F1 (overall and per type, strict IOB2, via seqeval) and token
accuracy. An `evaluate` module written for bertkit, loaded by path.

The headline numbers are strict: an entity counts only when its B- tag, I- tags, type and
boundaries are all right. `lenient_*` repeat the overall scores the way conlleval and seqeval's
default mode count them (a stray I- tag opens an entity), which is what run_ner.py and most
papers report, so the two can be compared."""

import datasets

from bertkit.core.metrics import base

_DESCRIPTION = "Entity-level P/R/F1 in strict IOB2 mode (seqeval), per entity type, token accuracy, lenient P/R/F1."
_INPUTS = "predictions: a list of IOB2 tag sequences. references: the true sequences, same lengths."


class Ner(base.Metric):
    description = _DESCRIPTION
    inputs = _INPUTS
    features = datasets.Features(
        {
            "predictions": datasets.Sequence(datasets.Value("string")),
            "references": datasets.Sequence(datasets.Value("string")),
        }
    )

    def _compute(self, predictions, references):
        from seqeval.metrics import classification_report, f1_score, precision_score, recall_score
        from seqeval.scheme import IOB2

        report = classification_report(
            references, predictions, mode="strict", scheme=IOB2, output_dict=True, zero_division=0
        )
        per_type = {
            name: {
                "precision": float(v["precision"]),
                "recall": float(v["recall"]),
                "f1": float(v["f1-score"]),
                "support": int(v["support"]),
            }
            for name, v in report.items()
            if not name.endswith(" avg")
        }
        micro = report.get("micro avg", {"precision": 0.0, "recall": 0.0, "f1-score": 0.0})
        tokens = sum(len(r) for r in references)
        right = sum(p == r for ps, rs in zip(predictions, references, strict=True) for p, r in zip(ps, rs, strict=True))
        return {
            "precision": float(micro["precision"]),
            "recall": float(micro["recall"]),
            "f1": float(micro["f1-score"]),
            "token_accuracy": right / tokens if tokens else 0.0,
            "lenient_precision": float(precision_score(references, predictions, zero_division=0)),
            "lenient_recall": float(recall_score(references, predictions, zero_division=0)),
            "lenient_f1": float(f1_score(references, predictions, zero_division=0)),
            "per_type": per_type,
        }
