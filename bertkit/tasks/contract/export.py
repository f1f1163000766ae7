"""The export part of the task contract (`Export`): what `bertkit export` writes of a task's model
and how it checks the result. The graph gives what the task's prediction reads (`outputs`, from
`forward`); the int8 check compares fp32's and int8's predictions as the task says they agree
(`agreement`) and its main metric on the task's scale. The default is a model whose `logits` have
one row per input, predictions compared by their labels; a task that differs subclasses it
(`tasks/<task>/export.py`), and a task with no export part cannot be exported."""

from __future__ import annotations

from collections.abc import Sequence


def without_scores(value):
    """A prediction without its scores (entities and answers compared by what they are)."""
    if isinstance(value, list):
        return [without_scores(v) for v in value]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in ("score", "scores")}
    return value


class Export:
    outputs: tuple[str, ...] = ("logits",)  # the ONNX graph's outputs, as predict reads them
    per_token = False  # whether they have a sequence axis (a row per token) besides the batch one
    metric_scale = 1.0  # what the task's metrics count up to (SQuAD's exact match and F1: 100)
    compares_predictions = True  # whether the int8 check compares predictions on records of the check data
    # what a prediction is: a label or labels, entities (text input) or tags (CoNLL input), an answer
    prediction_fields: tuple[str, ...] = ("label", "labels", "entities", "tags", "answer")

    def forward(self, model, inputs: dict, info: dict):
        """The graph's outputs, in `outputs`' order, from the bundle's model on `inputs` (the
        graph's input tensors by name); traced by the exporter, so torch operations only."""
        return model(**inputs).logits

    def check_texts(self, records: Sequence[dict], column: str) -> list[str]:
        """Texts from records of the check data for the fp32 check (their `column` field)."""
        return [str(r[column]) for r in records if isinstance(r.get(column), str)]

    def agreement(self, first: Sequence[dict], second: Sequence[dict]) -> dict:
        """How the predictions of two models on the same records agree: the share of records whose
        prediction is the same (a regression's score to two decimals)."""
        keys = [k for k in self.prediction_fields if first and k in first[0]]
        if not keys:  # regression: equal to two decimals
            same = [
                round(x.get("score") or 0, 2) == round(y.get("score") or 0, 2)
                for x, y in zip(first, second, strict=True)
            ]
        else:
            same = [
                all(without_scores(x.get(k)) == without_scores(y.get(k)) for k in keys)
                for x, y in zip(first, second, strict=True)
            ]
        share = sum(same) / max(len(same), 1)
        return {"records": len(same), "equal_predictions": share, "agreement": share}
