"""`bertkit explain` on a classify model: the target label's logit (single- and multi-label; the
predicted label unless --target names one), or the predicted value (regression), over a text or a
pair."""

from __future__ import annotations

import numpy as np

from bertkit.core.errors import BertkitError
from bertkit.tasks.classify.calibration import probabilities
from bertkit.tasks.contract.explaining import Explainer, Plan, Target, label_index, model_output, number
from bertkit.tasks.explain_inputs import encode_text


class ClassifyExplainer(Explainer):
    reads_pairs = True

    def check(self, text, pair, question, info, plain) -> None:
        if plain:  # a plain Hugging Face classifier: whatever was trained, a pair or not
            return
        reads_pairs = bool(info.get("text_pair_column"))
        if reads_pairs and pair is None:
            column = info["text_pair_column"]
            raise BertkitError(f"this model reads pairs ({column!r} beside the text): give --text-pair")
        if pair is not None and not reads_pairs:
            raise BertkitError("--text-pair: this model was trained on single texts; leave --text-pair out")

    def encode(self, tokenizer, text, pair, question, info):
        return info, encode_text(tokenizer, text, pair, info.get("max_length"))

    def plan(self, model, info, encoded, target) -> Plan:
        logits = model_output(model, encoded).logits[0].float().cpu().numpy()
        problem = info.get("problem_type", "single_label")
        if problem == "regression":
            if target is not None:
                raise BertkitError(
                    f"--target {target}: a regression model has one output, its value; leave --target out"
                )
            value = round(float(logits[0]), 6)
            return Plan([Target("score", [("logits", None, 0)])], "value", {"predicted": value})
        labels = list(info.get("labels") or []) or [f"LABEL_{i}" for i in range(len(logits))]
        probs = probabilities(logits[None], {**info, "problem_type": problem})[0]  # as predict gives them
        index = int(probs.argmax()) if target is None else label_index(target, labels)
        if problem == "multi_label":
            threshold = info.get("threshold", 0.5)
            predicted = [labels[i] for i in np.flatnonzero(probs > threshold)]
        else:
            predicted = labels[int(probs.argmax())]
        chosen = Target(
            labels[index],
            [("logits", None, index)],
            {"target_index": index, "probability": round(float(probs[index]), 6)},
        )
        summary = {
            "predicted": predicted,
            "probabilities": {n: round(float(p), 6) for n, p in zip(labels, probs, strict=True)},
        }
        return Plan([chosen], "logit", summary)

    def lay_out(self, explained: list[dict]) -> dict:
        return explained[0]

    def headline(self, result: dict) -> str:
        if result["score_kind"] == "value":
            return f"predicted value {number(result['predicted'])}"
        predicted = result["predicted"]
        return "predicted: " + (", ".join(predicted) or "no label" if isinstance(predicted, list) else predicted)

    def shown(self, result: dict) -> list[dict]:
        return [result]

    def title(self, explained: dict, result: dict) -> str:
        return f"label {explained['target']}" if "target_index" in explained else explained["target"]


EXPLAINER = ClassifyExplainer()
