"""A task: its name, the transformers class of its bundles, and its parts. Three are what every
task that writes bundles of its own has: `training`, `prediction`, `evaluation`; the others are
optional: `export` (ONNX), `explainer` (`bertkit explain`), `inspection` (`bertkit inspect`),
`audit` (`bertkit audit`), `selection` (`bertkit select`) and `card` (the model card's words),
each with the default most tasks take. Each part is an abstract class
(bertkit/tasks/contract/*.py): a part that lacks a required method cannot be made, so a task
missing one fails as soon as its module is imported (when it is registered, or at the first
`get_task`), naming the method, never deep inside a run."""

from __future__ import annotations

from dataclasses import dataclass, field

from bertkit.tasks.contract.auditing import Audit
from bertkit.tasks.contract.card import Card
from bertkit.tasks.contract.evaluation import Evaluation
from bertkit.tasks.contract.explaining import Explainer
from bertkit.tasks.contract.export import Export
from bertkit.tasks.contract.inspection import Inspection
from bertkit.tasks.contract.prediction import Prediction
from bertkit.tasks.contract.selecting import Selection
from bertkit.tasks.contract.training import Training

PARTS = {
    "training": Training, "prediction": Prediction, "evaluation": Evaluation, "export": Export,
    "explainer": Explainer, "inspection": Inspection, "audit": Audit,
    "selection": Selection, "card": Card,
}  # fmt: skip


@dataclass(frozen=True)
class Task:
    name: str  # as in the registry
    auto_model: str  # the transformers Auto class that loads a trained bundle
    training: Training
    # None for a task over another one, whose bundles are that task's (distill)
    prediction: Prediction | None
    evaluation: Evaluation | None
    export: Export | None = field(default_factory=Export)  # None: the task's models are not exported
    explainer: Explainer | None = None  # None: nothing to explain, and `explain_refusal` says why
    explain_refusal: str = ""  # e.g. "an embed model gives a vector, not a label to explain"
    inspection: Inspection = field(default_factory=Inspection)
    audit: Audit | None = None  # None: `bertkit audit` refuses the task (classes and tags only)
    selection: Selection | None = None  # None: `bertkit select` refuses the task (classify and ner)
    card: Card = field(default_factory=Card)

    def __post_init__(self):
        for name, kind in PARTS.items():
            part = getattr(self, name)
            required = name == "training" or (name in ("inspection", "card"))
            if (part is not None or required) and not isinstance(part, kind):
                raise TypeError(f"task {self.name}: {name} must be a {kind.__name__}, not {type(part).__name__}")
