"""The evaluation part of the task contract (`Evaluation`): a bundle scored on a labelled file.
A task gives its per-example results (`evaluate_examples`, a `Scored`, which `bertkit compare`
resamples), and `evaluate` is their score, so the two commands cannot disagree; a task with no
per-example results (mlm-adapt's perplexity) gives `evaluate` instead. A part that gives neither
cannot be defined (`TypeError` when its class is made)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bertkit.core.data.formats import detect_format
from bertkit.core.errors import BertkitError

if TYPE_CHECKING:
    from bertkit.core.run_info import RunInfo
    from bertkit.tasks.contract.options import EvaluateOptions
    from bertkit.tasks.contract.scored import Scored


class Evaluation:
    task_name = "this task"  # for the refusal of `evaluate_examples`

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.evaluate is Evaluation.evaluate and cls.evaluate_examples is Evaluation.evaluate_examples:
            raise TypeError(f"{cls.__name__} must define evaluate_examples (or evaluate, with no per-example results)")

    def evaluate(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> dict:
        """Scores of the model on a labelled file (`bertkit evaluate`): its per-example results' score."""
        return self.evaluate_examples(model, tokenizer, info, data, options).score()

    def evaluate_examples(self, model, tokenizer, info: RunInfo, data: str, options: EvaluateOptions) -> Scored:
        """The model's result on each example of a labelled file, as a `Scored` that scores any
        subset of them (`bertkit compare`: bootstrap intervals, paired tests)."""
        raise BertkitError(
            f"bertkit compare cannot score {self.task_name} models: the task gives no per-example results"
        )

    def data_format(self, source) -> str:
        """The format this task reads the file of `source` (a `DataSource`) in, told from its
        extension or its content as `load` and `evaluate` tell it (said once when from content):
        a command that reads one file several times tells it once and passes it on."""
        return detect_format(source.path, source.format)
