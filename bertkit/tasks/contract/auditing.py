"""The audit part of the task contract (`Audit`): what `bertkit audit` asks of a task to find the
training examples whose label is probably wrong. bertkit/auditing splits the examples into folds
and trains each fold as `bertkit train` would; the task's part says what an example is and its
given label (`examples`), the settings that keep every fold on the route and the labels of the
whole data (`fold_settings`), the probabilities a fold's model gives the examples it did not see
(`probabilities`), and which examples cleanlab flags (`issues`)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

    from bertkit.core.run_config import RunConfig
    from bertkit.core.run_info import RunInfo


# cleanlab's filters in this process: its worker pool would fork the command's own signal handlers
# (a worker stopped at the pool's end raised bertkit's Interrupted and printed a traceback)
N_JOBS = 1


@dataclass
class Examples:
    """The training examples of an audit, in file order."""

    records: list[dict]  # each example as a fold's training file (JSON lines) holds it
    places: list[str]  # where each one is: file:line
    shown: list[str]  # the text a person reads in the report
    given: list  # the given label: a class id, a list of ids (multi-label), or a tag id per word (NER)
    names: list[str]  # the label (or tag) names, in id order
    strata: list[str] | None = None  # a class per example, so that each fold holds every class's share
    words: list[list[str]] | None = None  # NER: the words the tags belong to
    info: dict = field(default_factory=dict)  # what the task found reading them (route, problem type)


@dataclass
class Flag:
    """One label cleanlab holds to be probably wrong."""

    index: int  # the example
    given: str | list[str]
    suggested: str | list[str]
    quality: float  # cleanlab's label quality in [0, 1]: the lower, the more suspect
    word: int | None = None  # NER: the word (from 0) whose tag is flagged


def whole_training_data(training, cfg: RunConfig):
    """The splits of `cfg` as the task's training part reads them (limits, cleaning, its checks),
    every training example kept in the training split: the training data stands in for the
    validation data, so no share is split off, and no test data is read."""
    data = cfg.data.model_copy(update={"validation": cfg.data.train, "test": None})
    return training.load(cfg.model_copy(update={"data": data}))


class Audit(ABC):
    """The audit part of the task contract: a task without one cannot be audited. It reads the
    data through the task's training part (`training`), as `bertkit train` does."""

    unit = "example"  # what a flag points at, as the report names it ("word" for NER)

    def __init__(self, training):
        self.training = training

    @abstractmethod
    def examples(self, cfg: RunConfig) -> Examples:
        """Every training example of `cfg` (data.max_train_samples applied), and its label."""

    @abstractmethod
    def fold_settings(self, examples: Examples) -> dict[str, Any]:
        """Config keys ({"classify.strategy": ...}) that make a fold trained on a JSON-lines file of
        `examples.records` run as the whole data would: the same route, the same label names."""

    @abstractmethod
    def probabilities(self, model, tokenizer, info: RunInfo, examples: Examples, indices, batch_size: int) -> list:
        """Predicted probabilities of the examples at `indices`, columns in `examples.names` order:
        an array per example (a row per word for NER)."""

    @abstractmethod
    def issues(self, examples: Examples, probabilities: list[np.ndarray]) -> list[Flag]:
        """The flagged labels, most suspect first (cleanlab), from the out-of-fold probabilities."""

    @abstractmethod
    def fixed(self, record: dict, flags: list[Flag], examples: Examples) -> dict:
        """`record` (an example as the fold files hold it) with each flagged label as suggested."""
