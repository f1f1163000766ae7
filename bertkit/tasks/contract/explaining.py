"""The explain part of the task contract (`Explainer`): what `bertkit explain` asks of a task: how one
input is read, which of the model's output scores are explained (`Target`s, gathered in a `Plan`),
and how the explanations are laid out in the result. Each task that can be explained holds its own
in its package (`bertkit/tasks/<task>/explaining.py`, returned by the task's `explainer`):

- classify: the target label's logit (single- and multi-label), or the predicted value (regression);
- ner: each predicted entity, scored by the sum over its words of the logit of the tag the model
  chose for the word (at the word's first sub-word, the one predict reads);
- qa: the answer's start logit (at its first token) and end logit (at its last token).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from bertkit.core.errors import BertkitError
from bertkit.tasks.explain_inputs import Encoded

__all__ = ["Encoded", "Explainer", "Plan", "Target", "label_index", "model_output"]


@dataclass
class Target:
    """A score read from the model's output: the sum of its `terms`, each (output field, position or
    None, column or None), e.g. ("logits", None, 2) for a classifier's third logit."""

    name: str
    terms: list[tuple[str, int | None, int | None]]
    extra: dict = field(default_factory=dict)


@dataclass
class Plan:
    targets: list[Target]
    score_kind: str
    summary: dict = field(default_factory=dict)  # the model's prediction, as JSON fields


class Explainer(ABC):
    """A task's part in `bertkit explain`. `check` refuses a request the task cannot read before
    the model is loaded; `encode` reads the input; `plan` picks the scores to explain from the
    model's output; `lay_out` puts the explanations (one per target, in the plan's order) in the
    result."""

    reads_pairs = False  # --text-pair
    reads_questions = False  # --question (the text is then the context)

    def check(self, text: str, pair: str | None, question: str | None, info: dict, plain: bool) -> None:  # noqa: B027
        """Refuse what this task's models cannot read (`plain`: a Hugging Face model without
        bertkit.json); by default nothing is refused."""

    @abstractmethod
    def encode(self, tokenizer, text: str, pair: str | None, question: str | None, info: dict) -> tuple[dict, Encoded]:
        """The bundle's settings as the task reads them, and the input with its words."""

    @abstractmethod
    def plan(self, model, info: dict, encoded: Encoded, target: str | None) -> Plan:
        """The scores to explain (`target`: the label or span asked for, else the prediction's)."""

    @abstractmethod
    def lay_out(self, explained: list[dict]) -> dict:
        """The result, from one explanation per target of the plan, in its order."""

    @abstractmethod
    def headline(self, result: dict) -> str:
        """The result's first line when shown (terminal, HTML, PNG): the model's prediction."""

    def shown(self, result: dict) -> list[dict]:
        """Every explanation the result holds, in the order they are shown."""
        return list(result["explanations"].values())

    def title(self, explained: dict, result: dict) -> str:
        """The name one explanation is shown under."""
        return explained["target"]


def number(value) -> str:
    """A score as explanations show it: three significant digits, or one decimal from 1,000."""
    return "-" if value is None else f"{value:.3g}" if abs(value) < 1000 else f"{value:.1f}"


def model_output(model, encoded: Encoded):
    import torch

    with torch.no_grad():
        return model(**encoded.tensors(model.device))


def label_index(value: str, labels: list[str], option: str = "--target") -> int:
    """A label given by name or by number."""
    if value in labels:
        return labels.index(value)
    if value.strip().lstrip("-").isdigit() and 0 <= int(value) < len(labels):
        return int(value)
    raise BertkitError(
        f"{option} {value}: not a label of this model; its labels are {', '.join(labels)} "
        f"(or their numbers, 0 to {len(labels) - 1})"
    )
