"""The qa task: its parts, over the package's modules (training.py, prediction.py, evaluation.py,
export.py, inspecting.py, explaining.py, card.py)."""

from __future__ import annotations

from bertkit.tasks.contract import Task
from bertkit.tasks.qa.card import QaCard
from bertkit.tasks.qa.evaluation import QaEvaluation
from bertkit.tasks.qa.explaining import EXPLAINER
from bertkit.tasks.qa.export import QaExport
from bertkit.tasks.qa.inspecting import QaInspection
from bertkit.tasks.qa.prediction import QaPrediction
from bertkit.tasks.qa.training import QaTraining

TASK = Task(
    name="qa",
    auto_model="AutoModelForQuestionAnswering",
    training=QaTraining(),
    prediction=QaPrediction(),
    evaluation=QaEvaluation(),
    export=QaExport(),
    explainer=EXPLAINER,
    inspection=QaInspection(),
    card=QaCard(),
)
