"""The rerank task: its parts, over the package's modules (training.py, prediction.py, evaluation.py,
card.py; groups, losses and scoring). Its export is the default: one relevance logit per pair."""

from __future__ import annotations

from bertkit.tasks.contract import Task
from bertkit.tasks.rerank.card import RerankCard
from bertkit.tasks.rerank.evaluation import RerankEvaluation
from bertkit.tasks.rerank.prediction import RerankPrediction
from bertkit.tasks.rerank.training import RerankTraining

TASK = Task(
    name="rerank",
    auto_model="AutoModelForSequenceClassification",
    training=RerankTraining(),
    prediction=RerankPrediction(),
    evaluation=RerankEvaluation(),
    card=RerankCard(),
)
