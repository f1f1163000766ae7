"""The embed task: its parts, over the package's modules (training.py, prediction.py, evaluation.py,
export.py, inspecting.py, card.py; the encoder, pairs and losses)."""

from __future__ import annotations

from bertkit.tasks.contract import Task
from bertkit.tasks.embed.card import EmbedCard
from bertkit.tasks.embed.evaluation import EmbedEvaluation
from bertkit.tasks.embed.export import EmbedExport
from bertkit.tasks.embed.inspecting import EmbedInspection
from bertkit.tasks.embed.prediction import EmbedPrediction
from bertkit.tasks.embed.training import EmbedTraining

TASK = Task(
    name="embed",
    auto_model="AutoModel",
    training=EmbedTraining(),
    prediction=EmbedPrediction(),
    evaluation=EmbedEvaluation(),
    export=EmbedExport(),
    explain_refusal="an embed model gives a vector, not a label to explain",
    inspection=EmbedInspection(),
    card=EmbedCard(),
)
