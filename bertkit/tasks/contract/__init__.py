"""The task contract: a `Task` and its parts (training, prediction, evaluation; export, explain,
inspect, audit, select, the model card), and the types they hand around (options, per-example scores, the
inspected view, the explained targets). docs/architecture.md has the table of every hook."""

from bertkit.tasks.contract.auditing import Audit, Examples, Flag
from bertkit.tasks.contract.card import Card
from bertkit.tasks.contract.evaluation import Evaluation
from bertkit.tasks.contract.explaining import Explainer, Plan, Target
from bertkit.tasks.contract.export import Export
from bertkit.tasks.contract.inspection import Inspection, View
from bertkit.tasks.contract.options import EvaluateOptions, PredictOptions
from bertkit.tasks.contract.prediction import Prediction, require_field
from bertkit.tasks.contract.scored import Scored
from bertkit.tasks.contract.selecting import Selection
from bertkit.tasks.contract.task import Task
from bertkit.tasks.contract.training import Training, pad_multiple

__all__ = [
    "Audit", "Card", "EvaluateOptions", "Evaluation", "Examples", "Explainer", "Export", "Flag", "Inspection", "Plan",
    "PredictOptions",
    "Prediction", "Scored", "Selection", "Target", "Task", "Training", "View", "pad_multiple", "require_field",
]
