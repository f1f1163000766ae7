"""The ner task: its parts, over the package's modules (training.py, prediction.py, evaluation.py,
export.py, inspecting.py, explaining.py, auditing.py, card.py)."""

from __future__ import annotations

from bertkit.tasks.contract import Task
from bertkit.tasks.ner.auditing import NerAudit
from bertkit.tasks.ner.card import NerCard
from bertkit.tasks.ner.evaluation import NerEvaluation
from bertkit.tasks.ner.explaining import EXPLAINER
from bertkit.tasks.ner.export import NerExport
from bertkit.tasks.ner.inspecting import NerInspection
from bertkit.tasks.ner.prediction import NerPrediction
from bertkit.tasks.ner.selecting import NerSelection
from bertkit.tasks.ner.training import NerTraining

_TRAINING = NerTraining()
TASK = Task(
    name="ner",
    auto_model="AutoModelForTokenClassification",
    training=_TRAINING,
    prediction=NerPrediction(),
    evaluation=NerEvaluation(),
    export=NerExport(),
    explainer=EXPLAINER,
    inspection=NerInspection(),
    audit=NerAudit(_TRAINING),
    selection=NerSelection(),
    card=NerCard(),
)
