"""The classify task: its parts, over the package's modules (training.py, prediction.py,
evaluation.py, inspecting.py, explaining.py, auditing.py; the export is the default: logits per text)."""

from __future__ import annotations

from bertkit.tasks.classify.auditing import ClassifyAudit
from bertkit.tasks.classify.calibration import is_calibrated
from bertkit.tasks.classify.evaluation import ClassifyEvaluation
from bertkit.tasks.classify.explaining import EXPLAINER
from bertkit.tasks.classify.inspecting import ClassifyInspection
from bertkit.tasks.classify.labels import MULTI
from bertkit.tasks.classify.prediction import ClassifyPrediction
from bertkit.tasks.classify.selecting import ClassifySelection
from bertkit.tasks.classify.training import ClassifyTraining
from bertkit.tasks.contract import Card, Task


class ClassifyCard(Card):
    def python_usage(self, where: str, info: dict, pipeline: str) -> list[str]:
        contrastive = bool(info.get("training", {}).get("contrastive"))
        if not contrastive and not is_calibrated(info):
            return super().python_usage(where, info, pipeline)
        # the contrastive head reads the pooled sentence vector (bertkit/core/pooled_head.py), which
        # plain transformers would not know to compute; a calibrated model's scores divide the logits
        # by its temperatures (bertkit.json's calibration), which a pipeline would not do
        load = "AutoModelForSequenceClassification.from_pretrained(" + f'"{where}")'
        lines = ["import torch", "from transformers import AutoModelForSequenceClassification, AutoTokenizer"]
        if contrastive:
            lines += [
                "from bertkit.core.pooled_head import restore  # the head reads the mean of the tokens",
                f"model = restore({load})",
            ]
        else:
            lines.append(f"model = {load}")
        lines += [
            f'tokenizer = AutoTokenizer.from_pretrained("{where}")',
            "with torch.no_grad():",
            '    logits = model(**tokenizer(["a text"], return_tensors="pt")).logits',
        ]
        if (info.get("calibration") or {}).get("confidence_map"):  # a temperature and a map: bertkit's function
            return [
                *lines,
                "import json",
                "from bertkit.tasks.classify.calibration import probabilities",
                f'info = json.load(open("{where}/bertkit.json"))',
                "scores = probabilities(logits.numpy(), info)  # calibrated, as bertkit predict gives them",
            ]
        if is_calibrated(info):
            found = info["calibration"]["temperatures"]
            shown = found[0] if len(set(found)) == 1 else f"torch.tensor({found})"
            lines.append(f"logits = logits / {shown}  # the calibration's temperature (bertkit.json)")
        scores = "logits.sigmoid()" if info.get("problem_type") == MULTI else "logits.softmax(-1)"
        return [*lines, f"scores = {scores}"]


_TRAINING = ClassifyTraining()
TASK = Task(
    name="classify",
    auto_model="AutoModelForSequenceClassification",
    training=_TRAINING,
    prediction=ClassifyPrediction(),
    evaluation=ClassifyEvaluation(),
    explainer=EXPLAINER,
    inspection=ClassifyInspection(),
    audit=ClassifyAudit(_TRAINING),
    selection=ClassifySelection(),
    card=ClassifyCard(),
)
