"""The mlm-adapt task: its parts, over the package's modules (training.py, prediction.py,
evaluation.py, export.py, inspecting.py, card.py, and the masking and scoring helpers)."""

from __future__ import annotations

from bertkit.tasks.contract import Task
from bertkit.tasks.mlm.card import MlmCard
from bertkit.tasks.mlm.evaluation import MlmEvaluation
from bertkit.tasks.mlm.export import MlmExport
from bertkit.tasks.mlm.inspecting import MlmInspection
from bertkit.tasks.mlm.prediction import MlmPrediction
from bertkit.tasks.mlm.training import MlmTraining

TASK = Task(
    name="mlm-adapt",
    auto_model="AutoModelForMaskedLM",
    training=MlmTraining(),
    prediction=MlmPrediction(),
    evaluation=MlmEvaluation(),
    export=MlmExport(),
    explain_refusal="a masked-LM model fills masks and has no label to explain",
    inspection=MlmInspection(),
    card=MlmCard(),
)
